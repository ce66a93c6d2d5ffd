"""The programs of ``test_explain.py`` for the ops of the networks people train (convolution,
pooling, normalization, losses, activations, joins and picks, attention): one per op, where
``x`` (``y``, or the leaves named in ``NET_LEAVES``) feed the op directly so that the rule's
gradient for that input is exactly torch's ``.grad``, and more argument values (``NET_VARIANTS``)."""

from __future__ import annotations

NET_OPS: dict[str, str] = {
    "ConvolutionBackward0": "x = torch.randn(2, 4, 5, 6, requires_grad=True)\n"
                            "w = torch.randn(6, 2, 3, 2, requires_grad=True)\n"
                            "b = torch.randn(6, requires_grad=True)\n"
                            "z = torch.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), "
                            "groups=2)",
    "NativeBatchNormBackward0": "x = torch.randn(3, 2, 2, 3, requires_grad=True)\n"
                                "w = torch.randn(2, requires_grad=True)\n"
                                "b = torch.randn(2, requires_grad=True)\n"
                                "z = torch.nn.functional.batch_norm(x, torch.zeros(2), torch.ones(2), w, b, "
                                "training=True)",
    "NativeGroupNormBackward0": "x = torch.randn(2, 6, 2, 2, requires_grad=True)\n"
                                "w = torch.randn(6, requires_grad=True)\n"
                                "b = torch.randn(6, requires_grad=True)\n"
                                "z = torch.nn.functional.group_norm(x, 3, w, b)",
    "MaxPool2DWithIndicesBackward0": "x = torch.randn(2, 2, 5, 5, requires_grad=True)\n"
                                     "z = torch.nn.functional.max_pool2d(x, 3, stride=2, padding=1)",
    "MaxPool3DWithIndicesBackward0": "x = torch.randn(1, 2, 3, 4, 4, requires_grad=True)\n"
                                     "z = torch.nn.functional.max_pool3d(x, 2, stride=1)",
    "AvgPool2DBackward0": "x = torch.randn(2, 2, 5, 5, requires_grad=True)\n"
                          "z = torch.nn.functional.avg_pool2d(x, 3, stride=2, padding=1)",
    "AvgPool3DBackward0": "x = torch.randn(1, 2, 3, 4, 4, requires_grad=True)\n"
                          "z = torch.nn.functional.avg_pool3d(x, 2)",
    "AdaptiveAvgPool2DBackward0": "x = torch.randn(2, 2, 5, 7, requires_grad=True)\n"
                                  "z = torch.nn.functional.adaptive_avg_pool2d(x, (3, 4))",
    "AdaptiveAvgPool3DBackward0": "x = torch.randn(1, 2, 3, 5, 4, requires_grad=True)\n"
                                  "z = torch.nn.functional.adaptive_avg_pool3d(x, (2, 3, 3))",
    "MseLossBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(2, 3, requires_grad=True)\n"
                        "z = torch.nn.functional.mse_loss(x, y)",
    "SmoothL1LossBackward0": "x = torch.randn(3, 4, requires_grad=True)\ny = torch.randn(3, 4, requires_grad=True)\n"
                             "z = torch.nn.functional.smooth_l1_loss(x, y, beta=0.6)",
    "HuberLossBackward0": "x = torch.randn(3, 4, requires_grad=True)\ny = torch.randn(3, 4, requires_grad=True)\n"
                          "z = torch.nn.functional.huber_loss(x, y, reduction='sum', delta=0.5)",
    "BinaryCrossEntropyWithLogitsBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                                             "y = torch.rand(3, 4, requires_grad=True)\n"
                                             "z = torch.nn.functional.binary_cross_entropy_with_logits(x, y)",
    "BinaryCrossEntropyBackward0": "x = (torch.rand(3, 4) * 0.8 + 0.1).requires_grad_()\n"
                                   "y = torch.rand(3, 4, requires_grad=True)\n"
                                   "z = torch.nn.functional.binary_cross_entropy(x, y)",
    "SiluBackward0": "x = torch.randn(6, requires_grad=True)\nz = torch.nn.functional.silu(x)",
    "LogSigmoidBackward0": "x = torch.randn(6, requires_grad=True)\nz = torch.nn.functional.logsigmoid(x)",
    "Log1PBackward0": "x = torch.rand(6).requires_grad_()\nz = x.log1p()",
    "RsqrtBackward0": "x = (torch.rand(6) + 0.2).requires_grad_()\nz = x.rsqrt()",
    "ReciprocalBackward0": "x = (torch.rand(6) + 0.2).requires_grad_()\nz = x.reciprocal()",
    "SoftplusBackward0": "x = (torch.randn(8) * 3).requires_grad_()\n"
                         "z = torch.nn.functional.softplus(x, beta=2, threshold=3)",
    "EluBackward0": "x = torch.randn(6, requires_grad=True)\nz = torch.nn.functional.elu(x, alpha=0.7)",
    "HardtanhBackward0": "x = (torch.randn(8) * 4).requires_grad_()\nz = torch.nn.functional.relu6(x)",
    "ClampMaxBackward0": "x = torch.randn(6, requires_grad=True)\nz = x.clamp_max(0.2)",
    "MishBackward0": "x = torch.tensor([-40.0, -3.0, -0.5, 0.0, 1.5, 25.0], requires_grad=True)\n"
                     "z = torch.nn.functional.mish(x)",
    "HardswishBackward0": "x = torch.tensor([-4.0, -3.0, -1.0, 0.0, 2.0, 3.0, 5.0], requires_grad=True)\n"
                          "z = torch.nn.functional.hardswish(x)",
    "PreluKernelBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\ny = torch.rand(3, requires_grad=True)\n"
                            "z = torch.prelu(x, y)",
    "NllLoss2DBackward0": "x = torch.randn(2, 3, 2, 2).log_softmax(1).requires_grad_()\n"
                          "z = torch.nn.functional.nll_loss(x, torch.tensor([[[0, 2], [1, -100]], [[2, 2], [0, 1]]]))",
    "UpsampleNearest1DBackward0": "x = torch.randn(2, 2, 3, requires_grad=True)\n"
                                  "z = torch.nn.functional.interpolate(x, size=7)",
    "UpsampleNearest2DBackward0": "x = torch.randn(1, 2, 3, 4, requires_grad=True)\n"
                                  "z = torch.nn.functional.interpolate(x, scale_factor=(2, 1.5))",
    "UpsampleNearest3DBackward0": "x = torch.randn(1, 1, 2, 3, 2, requires_grad=True)\n"
                                  "z = torch.nn.functional.interpolate(x, size=(3, 5, 4))",
    "VarBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = x.var(1, correction=0)",
    "StdBackward0": "x = torch.randn(3, 4, 2, requires_grad=True)\nz = x.std(dim=(0, 2), keepdim=True)",
    "LogsumexpBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = x.logsumexp(1)",
    "FlipBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = x.flip(0, -1)",
    "MvBackward0": "x = torch.randn(3, 4, requires_grad=True)\ny = torch.randn(4, requires_grad=True)\nz = x.mv(y)",
    "DotBackward0": "x = torch.randn(4, requires_grad=True)\ny = torch.randn(4, requires_grad=True)\nz = x.dot(y)",
    "NansumBackward0": "x = torch.randn(3, 4)\nx[0, 1] = x[2, 3] = float('nan')\nx.requires_grad_()\n"
                       "z = x.nansum(1, keepdim=True)",
    "DiagonalBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = torch.diagonal(x, 1, 1, 2)",
    "DiagEmbedBackward0": "x = torch.randn(2, 3, requires_grad=True)\nz = torch.diag_embed(x, 1, 0, 2)",
    "AliasBackward0": "x = torch.randn(2, 3, requires_grad=True)\nz = torch.ops.aten.alias(x)",
    "FakeQuantizePerTensorAffineCachemaskBackward0": "x = (torch.randn(3, 4) * 8).requires_grad_()\n"
                                                     "z = torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -50, 50)",
    "FakeQuantizePerChannelAffineCachemaskBackward0": "x = (torch.randn(2, 5, dtype=torch.float32) * 8)\n"
                                                      "x.requires_grad_()\n"
                                                      "z = torch.fake_quantize_per_channel_affine(x, "
                                                      "torch.tensor([0.1, 0.05], dtype=torch.float32), "
                                                      "torch.tensor([0, 3], dtype=torch.int32), 0, -50, 50)",
    "IndexAddBackward0": "x = torch.randn(4, 3, requires_grad=True)\ny = torch.randn(5, 3, requires_grad=True)\n"
                         "z = x.index_add(0, torch.tensor([0, 2, 0, 3, 1]), y, alpha=0.5)",
    "VdotBackward0": "x = torch.randn(4, requires_grad=True)\ny = torch.randn(4, requires_grad=True)\n"
                     "z = torch.vdot(x, y)",
    "NormBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch._C._VariableFunctions.norm(x, 3)",
    "NormBackward1": "x = torch.randn(3, 4, requires_grad=True)\n"
                     "z = torch._C._VariableFunctions.norm(x, 3, [1], False)",  # pairwise_distance's
    "TrilBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = torch.tril(x, -1)",
    "TriuBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.triu(x, 1)",
    "SqueezeBackward2": "x = torch.randn(1, 3, 1, requires_grad=True)\nz = x.squeeze((0, 2))",
    "CatBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(2, 4, requires_grad=True)\n"
                    "z = torch.cat([x, y], -1)",
    "StackBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(2, 3, requires_grad=True)\n"
                      "z = torch.stack([x, y], 1)",
    "UnbindBackward0": "x = torch.randn(3, 4, requires_grad=True)\na, b, c, d = x.unbind(1)\nz = a * 2 + c",
    "SplitWithSizesBackward0": "x = torch.randn(2, 7, requires_grad=True)\na, b, c = x.split([2, 4, 1], dim=1)\n"
                               "z = a * 3 + c",
    "TransposeBackward1": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = x * 1\nz.transpose_(0, 2)",
    "IndexBackward0": "x = torch.randn(4, 3, requires_grad=True)\nz = x[torch.tensor([[0, 3], [0, 1]])]",
    "GatherBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                       "z = x.gather(1, torch.tensor([[0, 0], [3, 1], [2, 2]]))",
    "ConstantPadNdBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                              "z = torch.nn.functional.pad(x, (1, -1, 0, 2))",
    "RepeatBackward0": "x = torch.randn(2, 3, requires_grad=True)\nz = x.repeat(2, 1, 3)",
    "CumsumBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = x.cumsum(-1)",
    "MaxBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = x.max(1).values",
    "MinBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = x.min(0, keepdim=True).values",
    "MaxBackward1": "x = torch.tensor([[1.0, 3.0], [3.0, -2.0]], requires_grad=True)\nz = x.max()",  # a tie
    "MinBackward1": "x = torch.randn(3, 4, requires_grad=True)\nz = x.min()",
    "LinalgVectorNormBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.linalg.vector_norm(x)",
    "NativeDropoutBackward0": "x = torch.randn(4, 5, requires_grad=True)\nz = torch.native_dropout(x, 0.4, True)[0]",
    "ScaledDotProductFlashAttentionForCpuBackward0": "x = torch.randn(2, 2, 3, 4, requires_grad=True)\n"
                                                     "y = torch.randn(2, 2, 5, 4, requires_grad=True)\n"
                                                     "v = torch.randn(2, 2, 5, 4, requires_grad=True)\n"
                                                     "z = torch.nn.functional.scaled_dot_product_attention(x, y, v)",
    "IndexSelectBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = x.index_select(1, torch.tensor([3, 0, 3]))",
    "WeightNormInterfaceBackward0": "x = torch.randn(3, 2, 2, requires_grad=True)\n"
                                    "y = torch.randn(3, 1, 1, requires_grad=True)\n"
                                    "z = torch._weight_norm_interface(x, y, 0)[0]",
    "CtcLossBackward0": "x = torch.randn(6, 2, 5).log_softmax(-1).detach().requires_grad_()\n"
                        "z = torch.nn.functional.ctc_loss(x, torch.tensor([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2], "
                        "reduction='none')",
    "CtcLossBackward1": "x = torch.randn(7, 2, 4).log_softmax(-1).detach().requires_grad_()\n"
                        "z = torch.ops.aten._ctc_loss(x, torch.tensor([1, 1, 2, 3, 2]), torch.tensor([7, 6]), "
                        "torch.tensor([3, 2]), 0, False)[0]",
    "LinalgMatrixExpBackward0": "x = (torch.randn(2, 3, 3) * 0.8).requires_grad_()\nz = torch.linalg.matrix_exp(x)",
    "LinalgCholeskyExBackward0": "m = torch.randn(4, 4)\nx = (m @ m.T + 4 * torch.eye(4)).requires_grad_()\n"
                                 "z = torch.linalg.cholesky(x)",
    "CholeskySolveBackward0": "x = torch.randn(3, 2, requires_grad=True)\n"
                              "y = (torch.randn(3, 3).tril(-1) + torch.diag(torch.rand(3) + 1)).requires_grad_()\n"
                              "z = torch.cholesky_solve(x, y)",
    "CeluBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.nn.functional.celu(x, 0.7)",
    "HardshrinkBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.nn.functional.hardshrink(x, 0.4)",
    "SoftshrinkBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.nn.functional.softshrink(x, 0.4)",
    "ThresholdBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.nn.functional.threshold(x, 0.1, -2.0)",
    "SignBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.sign(x)",
    "GluBackward0": "x = torch.randn(2, 6, 3, requires_grad=True)\nz = torch.nn.functional.glu(x, dim=1)",
    "XlogyBackward0": "x = torch.tensor([[0.0, 1.5, -2.0], [0.5, 0.0, 3.0]], requires_grad=True)\n"
                      "y = torch.tensor([0.7, 2.0, 1.3], requires_grad=True)\nz = torch.xlogy(x, y)",
    "SoftMarginLossBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                               "y = torch.sign(torch.randn(3, 4))\n"
                               "z = torch.nn.functional.soft_margin_loss(x, y)",
    "AdaptiveMaxPool2DBackward0": "x = torch.randn(2, 3, 5, 7, requires_grad=True)\n"
                                  "z = torch.nn.functional.adaptive_max_pool2d(x, (2, 3))",
    "AdaptiveMaxPool3DBackward0": "x = torch.randn(1, 2, 3, 4, 5, requires_grad=True)\n"
                                  "z = torch.nn.functional.adaptive_max_pool3d(x, (2, 2, 3))",
    "FractionalMaxPool2DBackward0": "x = torch.randn(1, 2, 6, 7, requires_grad=True)\n"
                                    "z = torch.nn.functional.fractional_max_pool2d(x, 2, output_size=(3, 4))",
    "FractionalMaxPool3DBackward0": "x = torch.randn(1, 2, 4, 5, 4, requires_grad=True)\n"
                                    "z = torch.nn.functional.fractional_max_pool3d(x, 2, output_size=(2, 3, 2))",
    # torch's elementwise functions (analysis/explain/elementwise.py)
    "Log2Backward0": "x = (torch.rand(5) + 0.2).requires_grad_()\nz = torch.log2(x)",
    "Log10Backward0": "x = (torch.rand(5) + 0.2).requires_grad_()\nz = torch.log10(x)",
    "AsinBackward0": "x = (torch.rand(5) * 1.8 - 0.9).requires_grad_()\nz = torch.asin(x)",
    "AcosBackward0": "x = (torch.rand(5) * 1.8 - 0.9).requires_grad_()\nz = torch.acos(x)",
    "AtanhBackward0": "x = (torch.rand(5) * 1.8 - 0.9).requires_grad_()\nz = torch.atanh(x)",
    "AcoshBackward0": "x = (torch.rand(5) + 1.2).requires_grad_()\nz = torch.acosh(x)",
    "AtanBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.atan(x)",
    "AsinhBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.asinh(x)",
    "SinhBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.sinh(x)",
    "CoshBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.cosh(x)",
    "TanBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.tan(x)",
    "Exp2Backward0": "x = torch.randn(5, requires_grad=True)\nz = torch.exp2(x)",
    "Expm1Backward0": "x = torch.randn(5, requires_grad=True)\nz = torch.expm1(x)",
    "ErfBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.erf(x)",
    "ErfcBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.erfc(x)",
    "SincBackward0": "x = torch.tensor([0.0, 0.3, -1.7, 2.5], requires_grad=True)\nz = torch.sinc(x)",
    "NanToNumBackward0": "x = torch.tensor([1.0, float('nan'), float('inf'), -2.0], requires_grad=True)\n"
                         "z = torch.nan_to_num(x)",
    "HardsigmoidBackward0": "x = torch.tensor([-4.0, -1.0, 0.5, 2.9, 3.5], requires_grad=True)\n"
                            "z = torch.nn.functional.hardsigmoid(x)",
    "LogitBackward0": "x = (torch.rand(5) * 0.9 + 0.05).requires_grad_()\nz = torch.logit(x)",
    "Deg2RadBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.deg2rad(x)",
    "Rad2DegBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.rad2deg(x)",
    "FracBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.frac(x)",
    "FloorBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.floor(x)",
    "CeilBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.ceil(x)",
    "RoundBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.round(x)",
    "TruncBackward0": "x = torch.randn(5, requires_grad=True)\nz = torch.trunc(x)",
    "Atan2Backward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                      "y = torch.randn(4, requires_grad=True)\n"
                      "z = torch.atan2(x, y)",
    "HypotBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                      "y = torch.randn(3, 1, requires_grad=True)\n"
                      "z = torch.hypot(x, y)",
    "LogaddexpBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                          "y = torch.randn(3, 4, requires_grad=True)\n"
                          "z = torch.logaddexp(x, y)",
    "LerpBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                     "y = torch.randn(3, 4, requires_grad=True)\n"
                     "z = torch.lerp(x, y, 0.3)",
    "LerpBackward1": "x = torch.randn(3, 4, requires_grad=True)\n"
                     "y = torch.randn(3, 4, requires_grad=True)\n"
                     "w = torch.rand(3, 4, requires_grad=True)\n"
                     "z = torch.lerp(x, y, w)",
    "AmaxBackward0": "x = torch.tensor([[1.0, 3.0, 3.0], [2.0, -1.0, 0.5]], requires_grad=True)\n"
                     "z = torch.amax(x, dim=1)",
    "AminBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.amin(x, dim=(0, 1), keepdim=True)",
    "TopkBackward0": "x = torch.randn(3, 5, requires_grad=True)\nz = torch.topk(x, 2, dim=1).values",
    "SortBackward0": "x = torch.randn(4, 3, requires_grad=True)\nz = torch.sort(x, dim=0, descending=True).values",
    "RollBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.roll(x, shifts=(1, -2), dims=(0, 1))",
    "MultiMarginLossBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                                "z = torch.nn.functional.multi_margin_loss(x, torch.tensor([1, 3, 0]))",
    "MultilabelMarginLossBackward0": "x = torch.randn(3, 4, requires_grad=True)\n"
                                     "z = torch.nn.functional.multilabel_margin_loss(x, torch.tensor("
                                     "[[1, 3, -1, 0], [0, -1, 2, 1], [2, 1, 0, 3]]))",
    "ReflectionPad1DBackward0": "x = torch.randn(2, 3, 5, requires_grad=True)\n"
                                "z = torch.nn.functional.pad(x, (3, 2), mode='reflect')",
    "ReflectionPad2DBackward0": "x = torch.randn(1, 2, 4, 5, requires_grad=True)\n"
                                "z = torch.nn.functional.pad(x, (1, 3, 2, 1), mode='reflect')",
    "ReflectionPad3DBackward0": "x = torch.randn(1, 1, 3, 4, 3, requires_grad=True)\n"
                                "z = torch.nn.functional.pad(x, (1, 2, 2, 1, 1, 1), mode='reflect')",
    "ReplicationPad1DBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                                 "z = torch.nn.functional.pad(x, (3, 2), mode='replicate')",
    "ReplicationPad2DBackward0": "x = torch.randn(1, 2, 3, 4, requires_grad=True)\n"
                                 "z = torch.nn.functional.pad(x, (2, 3, 1, 4), mode='replicate')",
    "ReplicationPad3DBackward0": "x = torch.randn(1, 1, 2, 3, 3, requires_grad=True)\n"
                                 "z = torch.nn.functional.pad(x, (1, 2, 2, 1, 3, 1), mode='replicate')",
    # a create_graph pass's nodes (analysis/explain/double.py), made here by calling the backward
    # op itself: ``y`` is its grad_output, ``x`` the forward op's input (or output)
    "TanhBackwardBackward0": "y = torch.randn(3, 4, requires_grad=True)\n"
                             "x = torch.randn(3, 4).tanh().requires_grad_()\n"
                             "z = torch.ops.aten.tanh_backward(y, x)",
    "SigmoidBackwardBackward0": "y = torch.randn(3, 4, requires_grad=True)\n"
                                "x = torch.randn(3, 4).sigmoid().requires_grad_()\n"
                                "z = torch.ops.aten.sigmoid_backward(y, x)",
    "LeakyReluBackwardBackward0": "y = torch.randn(3, 4, requires_grad=True)\n"
                                  "x = torch.randn(3, 4, requires_grad=True)\n"
                                  "z = torch.ops.aten.leaky_relu_backward(y, x, 0.2, False)",
    "ThresholdBackwardBackward0": "y = torch.randn(3, 4, requires_grad=True)\n"
                                  "x = torch.randn(3, 4, requires_grad=True)\n"
                                  "z = torch.ops.aten.threshold_backward(y, x, 0.1)",
    "SoftplusBackwardBackward0": "y = torch.randn(3, 4, requires_grad=True)\n"
                                 "x = (torch.randn(3, 4) * 8).requires_grad_()\n"
                                 "z = torch.ops.aten.softplus_backward(y, x, 2.0, 5.0)",
    "GeluBackwardBackward0": "y = torch.randn(3, 4, requires_grad=True)\nx = torch.randn(3, 4, requires_grad=True)\n"
                             "z = torch.ops.aten.gelu_backward(y, x)",
    "EluBackwardBackward0": "y = torch.randn(3, 4, requires_grad=True)\nx = torch.randn(3, 4, requires_grad=True)\n"
                            "z = torch.ops.aten.elu_backward(y, 0.7, 1.2, 1.5, False, x)",
    "MseLossBackwardBackward0": "y = torch.randn((), requires_grad=True)\nx = torch.randn(3, 4, requires_grad=True)\n"
                                "t = torch.randn(3, 4, requires_grad=True)\n"
                                "z = torch.ops.aten.mse_loss_backward(y, x, t, 1)",
    "BaddbmmBackward0": "b = torch.randn(2, 3, 5, requires_grad=True)\nx = torch.randn(2, 3, 4, requires_grad=True)\n"
                        "y = torch.randn(2, 4, 5, requires_grad=True)\nz = torch.baddbmm(b, x, y)",
    "CdistBackward0": "x = torch.randn(4, 3, requires_grad=True)\ny = torch.randn(5, 3, requires_grad=True)\n"
                      "z = torch.cdist(x, y)",
    "UpsampleBilinear2DBackward0": "x = torch.randn(1, 2, 3, 4, requires_grad=True)\n"
                                   "z = torch.nn.functional.interpolate(x, scale_factor=2, mode='bilinear')",
    "UpsampleLinear1DBackward0": "x = torch.randn(2, 3, 5, requires_grad=True)\n"
                                 "z = torch.nn.functional.interpolate(x, size=8, mode='linear', align_corners=True)",
    "UpsampleTrilinear3DBackward0": "x = torch.randn(1, 1, 2, 3, 2, requires_grad=True)\n"
                                    "z = torch.nn.functional.interpolate(x, size=(3, 5, 4), mode='trilinear')",
    "EmbeddingBagBackward0": "x = torch.randn(10, 4, requires_grad=True)\n"
                             "z = torch.nn.functional.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3]), x, "
                             "torch.tensor([0, 3]), mode='sum')",
    "GridSampler2DBackward0": "x = torch.rand(1, 2, 4, 5, requires_grad=True)\n"
                              "y = (torch.rand(1, 3, 3, 2) * 2.4 - 1.2).requires_grad_()\n"
                              "z = torch.nn.functional.grid_sample(x, y, align_corners=False)",
    "AffineGridGeneratorBackward0": "x = torch.randn(2, 2, 3, requires_grad=True)\n"
                                    "z = torch.nn.functional.affine_grid(x, (2, 1, 3, 4), align_corners=False)",
    "CumprodBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.cumprod(x, dim=1)",
    "LinalgDetBackward0": "x = torch.randn(2, 3, 3, requires_grad=True)\nz = torch.linalg.det(x)",
    "LinalgInvExBackward0": "x = (torch.randn(3, 3) + 3 * torch.eye(3)).requires_grad_()\nz = torch.linalg.inv(x)",
    "PixelShuffleBackward0": "x = torch.randn(2, 8, 2, 3, requires_grad=True)\n"
                             "z = torch.nn.functional.pixel_shuffle(x, 2)",
    "PixelUnshuffleBackward0": "x = torch.randn(1, 2, 4, 6, requires_grad=True)\n"
                               "z = torch.nn.functional.pixel_unshuffle(x, 2)",
}
NET_LEAVES: dict[str, list[str]] = {
    "ConvolutionBackward0": ["x", "w", "b"], "NativeBatchNormBackward0": ["x", "w", "b"],
    "NativeGroupNormBackward0": ["x", "w", "b"], "ScaledDotProductFlashAttentionForCpuBackward0": ["x", "y", "v"],
    **{op: ["y", "x"] for op in ("TanhBackwardBackward0", "SigmoidBackwardBackward0", "LeakyReluBackwardBackward0",
                                 "ThresholdBackwardBackward0", "SoftplusBackwardBackward0", "GeluBackwardBackward0",
                                 "EluBackwardBackward0")},
    "MseLossBackwardBackward0": ["y", "x", "t"],
    "CholeskySolveBackward0": ["x", "y"],
    "SoftMarginLossBackward0": ["x"],  # torch has no gradient for the target
    "LerpBackward1": ["x", "y", "w"],
    "BaddbmmBackward0": ["b", "x", "y"],
}
NET_VARIANTS: dict[str, tuple[str, str]] = {
    "conv1d stride pad no bias": ("ConvolutionBackward0", "x = torch.randn(2, 3, 9, requires_grad=True)\n"
                                  "w = torch.randn(4, 3, 3, requires_grad=True)\n"
                                  "z = torch.nn.functional.conv1d(x, w, stride=2, padding=2, dilation=2)"),
    "conv transposed 2d": ("ConvolutionBackward0", "x = torch.randn(2, 4, 3, 3, requires_grad=True)\n"
                           "w = torch.randn(4, 3, 3, 2, requires_grad=True)\nb = torch.randn(6, requires_grad=True)\n"
                           "z = torch.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1, "
                           "output_padding=1, groups=2, dilation=(1, 2))"),
    "conv3d": ("ConvolutionBackward0", "x = torch.randn(1, 2, 3, 4, 4, requires_grad=True)\n"
               "w = torch.randn(3, 2, 2, 3, 2, requires_grad=True)\n"
               "z = torch.nn.functional.conv3d(x, w, stride=(1, 2, 1), padding=(0, 1, 1))"),
    "conv depthwise": ("ConvolutionBackward0", "x = torch.randn(2, 3, 6, 5, requires_grad=True)\n"
                       "w = torch.randn(6, 1, 3, 3, requires_grad=True)\n"
                       "z = torch.nn.functional.conv2d(x, w, padding=1, groups=3)"),
    "conv transposed 1d": ("ConvolutionBackward0", "x = torch.randn(2, 3, 5, requires_grad=True)\n"
                           "w = torch.randn(3, 2, 4, requires_grad=True)\n"
                           "z = torch.nn.functional.conv_transpose1d(x, w, stride=3, padding=2)"),
    "group norm no affine": ("NativeGroupNormBackward0", "x = torch.randn(3, 4, 5, requires_grad=True)\n"
                             "z = torch.nn.functional.group_norm(x, 2)"),
    "nearest down and odd": ("UpsampleNearest2DBackward0", "x = torch.randn(1, 2, 5, 3, requires_grad=True)\n"
                             "z = torch.nn.functional.interpolate(x, size=(2, 7))"),
    "var all unbiased": ("VarBackward0", "x = torch.randn(3, 4, requires_grad=True)\nz = x.var()"),
    "std all": ("StdBackward0", "x = torch.randn(5, requires_grad=True)\nz = x.std()"),
    "batch norm eval": ("NativeBatchNormBackward0", "x = torch.randn(3, 2, 4, requires_grad=True)\n"
                        "w = torch.randn(2, requires_grad=True)\nb = torch.randn(2, requires_grad=True)\n"
                        "z = torch.nn.functional.batch_norm(x, torch.randn(2), torch.rand(2) + 0.5, w, b, "
                        "training=False)"),
    "batch norm 2d input no affine": ("NativeBatchNormBackward0", "x = torch.randn(5, 3, requires_grad=True)\n"
                                      "z = torch.nn.functional.batch_norm(x, None, None, training=True)"),
    "avg pool ceil no pad count": ("AvgPool2DBackward0", "x = torch.randn(1, 2, 5, 6, requires_grad=True)\n"
                                   "z = torch.nn.functional.avg_pool2d(x, (3, 2), stride=2, padding=1, ceil_mode=True, "
                                   "count_include_pad=False)"),
    "avg pool divisor": ("AvgPool2DBackward0", "x = torch.randn(1, 1, 4, 4, requires_grad=True)\n"
                         "z = torch.nn.functional.avg_pool2d(x, 2, divisor_override=3)"),
    "max pool ceil dilation": ("MaxPool2DWithIndicesBackward0", "x = torch.randn(1, 2, 7, 6, requires_grad=True)\n"
                               "z = torch.nn.functional.max_pool2d(x, 2, stride=2, dilation=2, ceil_mode=True)"),
    "mse none": ("MseLossBackward0", "x = torch.randn(2, 3, requires_grad=True)\n"
                 "y = torch.randn(2, 3, requires_grad=True)\n"
                 "z = torch.nn.functional.mse_loss(x, y, reduction='none')"),
    "mse sum": ("MseLossBackward0", "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(2, 3)\n"
                "z = torch.nn.functional.mse_loss(x, y, reduction='sum')"),
    "bce logits weights": ("BinaryCrossEntropyWithLogitsBackward0", "x = torch.randn(3, 4, requires_grad=True)\n"
                           "y = torch.rand(3, 4, requires_grad=True)\n"
                           "z = torch.nn.functional.binary_cross_entropy_with_logits(x, y, weight=torch.rand(4), "
                           "pos_weight=torch.rand(4) * 3, reduction='none')"),
    "bce weight sum": ("BinaryCrossEntropyBackward0", "x = (torch.rand(3, 4) * 0.8 + 0.1).requires_grad_()\n"
                       "y = torch.rand(3, 4)\n"
                       "z = torch.nn.functional.binary_cross_entropy(x, y, weight=torch.rand(3, 4), reduction='sum')"),
    "hardtanh custom": ("HardtanhBackward0", "x = torch.randn(8, requires_grad=True)\n"
                        "z = torch.nn.functional.hardtanh(x, -0.5, 0.3)"),
    "cat dim 0 three": ("CatBackward0", "x = torch.randn(1, 3, requires_grad=True)\n"
                        "y = torch.randn(2, 3, requires_grad=True)\n"
                        "z = torch.cat([x, y, torch.randn(2, 3)], 0)"),
    "stack last dim": ("StackBackward0", "x = torch.randn(2, 3, requires_grad=True)\n"
                       "y = torch.randn(2, 3, requires_grad=True)\n"
                       "z = torch.stack([x, y, torch.randn(2, 3)], -1)"),
    "index two tensors apart": ("IndexBackward0", "x = torch.randn(3, 4, 5, requires_grad=True)\n"
                                "z = x[torch.tensor([0, 2, 0]), :, torch.tensor([[1], [4]])]"),
    "index adjacent tensors": ("IndexBackward0", "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                               "z = x[:, torch.tensor([2, 0]), torch.tensor([1, -1])]"),
    "index bool mask": ("IndexBackward0", "x = torch.randn(3, 4, requires_grad=True)\n"
                        "z = x[torch.tensor([[True, False, True, False], [False, False, True, True], "
                        "[True, True, False, False]])]"),
    "index bool rows": ("IndexBackward0", "x = torch.randn(3, 2, requires_grad=True)\n"
                        "z = x[torch.tensor([True, False, True])]"),
    "norm ord 3 dim keepdim": ("LinalgVectorNormBackward0", "x = torch.randn(3, 4, requires_grad=True)\n"
                               "z = torch.linalg.vector_norm(x, 3, dim=0, keepdim=True)"),
    "norm ord 1 dims": ("LinalgVectorNormBackward0", "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                        "z = torch.linalg.vector_norm(x, 1, dim=(0, 2))"),
    "torch.norm p 2 keepdim": ("NormBackward1", "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                               "z = torch._C._VariableFunctions.norm(x, 2, [0, 2], True)"),
    "diag of a vector": ("DiagEmbedBackward0", "x = torch.randn(4, requires_grad=True)\nz = torch.diag(x)"),
    "diag_embed below": ("DiagEmbedBackward0", "x = torch.randn(2, 3, requires_grad=True)\n"
                         "z = torch.diag_embed(x, -1, -1, 1)"),
    "diagonal below": ("DiagonalBackward0", "x = torch.randn(4, 3, requires_grad=True)\nz = torch.diagonal(x, -1)"),
    "index_add dim 1": ("IndexAddBackward0", "x = torch.randn(2, 4, requires_grad=True)\n"
                        "y = torch.randn(2, 3, requires_grad=True)\nz = x.index_add(1, torch.tensor([3, 0, 3]), y)"),
    "tril diagonal 1": ("TrilBackward0", "x = torch.randn(4, 3, requires_grad=True)\nz = torch.tril(x, 1)"),
    "nansum all": ("NansumBackward0", "x = torch.randn(3, 4)\nx[1, 2] = float('nan')\nx.requires_grad_()\n"
                   "z = x.nansum()"),
    "tensor norm dim": ("LinalgVectorNormBackward0", "x = torch.randn(3, 4, requires_grad=True)\nz = x.norm(dim=1)"),
    "bce at the edges": ("BinaryCrossEntropyBackward0", "x = torch.tensor([0.0, 1.0, 0.5, 0.25]).requires_grad_()\n"
                         "y = torch.tensor([0.3, 0.3, 0.3, 1.0], requires_grad=True)\n"
                         "z = torch.nn.functional.binary_cross_entropy(x, y, reduction='sum')"),
    "norm ord 1.5 with a zero": ("LinalgVectorNormBackward0", "x = torch.tensor([0.0, 1.0, -2.0], requires_grad=True)\n"
                                 "z = torch.linalg.vector_norm(x, 1.5)"),
    "weight norm, last dim": ("WeightNormInterfaceBackward0", "x = torch.randn(3, 2, 4, requires_grad=True)\n"
                              "y = torch.randn(1, 1, 4, requires_grad=True)\n"
                              "z = torch._weight_norm_interface(x, y, 2)[0]"),
    "ctc unaligned, zero_infinity": ("CtcLossBackward0", "x = torch.randn(3, 2, 4).log_softmax(-1).detach()"
                                     ".requires_grad_()\n"
                                     "z = torch.nn.functional.ctc_loss(x, torch.tensor([[1, 1, 2], [2, 3, 0]]), "
                                     "[3, 3], [3, 2], reduction='none', zero_infinity=True)"),
    "ctc blank 3, concatenated targets": ("CtcLossBackward0", "x = torch.randn(5, 2, 4).log_softmax(-1).detach()"
                                          ".requires_grad_()\n"
                                          "z = torch.nn.functional.ctc_loss(x, torch.tensor([0, 1, 2, 2]), [5, 4], "
                                          "[2, 2], blank=3, reduction='none')"),
    "matrix exp of a large matrix": ("LinalgMatrixExpBackward0", "x = (torch.randn(4, 4) * 3).requires_grad_()\n"
                                     "z = torch.linalg.matrix_exp(x)"),
    "cholesky upper, batched": ("LinalgCholeskyExBackward0", "m = torch.randn(2, 3, 3)\n"
                                "x = (m @ m.mT + 3 * torch.eye(3)).requires_grad_()\n"
                                "z = torch.linalg.cholesky(x, upper=True)"),
    "cholesky solve upper, batched": ("CholeskySolveBackward0", "x = torch.randn(2, 3, 2, requires_grad=True)\n"
                                      "y = (torch.randn(2, 3, 3).triu(1) + torch.diag_embed(torch.rand(2, 3) + 1))"
                                      ".requires_grad_()\nz = torch.cholesky_solve(x, y, upper=True)"),
    "baddbmm alpha beta, a broadcast mask": ("BaddbmmBackward0", "b = torch.randn(3, 5, requires_grad=True)\n"
                                             "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                                             "y = torch.randn(2, 4, 5, requires_grad=True)\n"
                                             "z = torch.baddbmm(b, x, y, beta=0.5, alpha=2.0)"),
    "bilinear, align_corners, odd sizes": ("UpsampleBilinear2DBackward0",
                                           "x = torch.randn(2, 1, 3, 5, requires_grad=True)\n"
                                           "z = torch.nn.functional.interpolate(x, size=(7, 4), mode='bilinear', "
                                           "align_corners=True)"),
    "bilinear down, float64": ("UpsampleBilinear2DBackward0", "x = torch.randn(1, 2, 6, 5, dtype=torch.float64, "
                               "requires_grad=True)\n"
                               "z = torch.nn.functional.interpolate(x, size=(4, 3), mode='bilinear')"),
    "bilinear by 1.7": ("UpsampleBilinear2DBackward0", "x = torch.randn(1, 1, 3, 4, requires_grad=True)\n"
                        "z = torch.nn.functional.interpolate(x, scale_factor=1.7, mode='bilinear')"),
    "embedding bag mean, padding, last offset": ("EmbeddingBagBackward0",
                                                 "x = torch.randn(8, 3, requires_grad=True)\n"
                                                 "z = torch.nn.functional.embedding_bag(torch.tensor([1, 4, 4, 2, 4, "
                                                 "7]), x, torch.tensor([0, 3, 5, 6]), mode='mean', padding_idx=4, "
                                                 "include_last_offset=True)"),
    "embedding bag max, 2-D input": ("EmbeddingBagBackward0", "x = torch.randn(6, 3, requires_grad=True)\n"
                                     "z = torch.nn.functional.embedding_bag(torch.tensor([[0, 2, 5], [5, 1, 0]]), x, "
                                     "mode='max')"),
    "embedding bag per-sample weights": ("EmbeddingBagBackward0", "x = torch.randn(6, 3, requires_grad=True)\n"
                                         "y = torch.rand(5, requires_grad=True)\n"
                                         "z = torch.nn.functional.embedding_bag(torch.tensor([0, 2, 5, 2, 1]), x, "
                                         "torch.tensor([0, 2]), mode='sum', per_sample_weights=y)"),
    "grid sample, align_corners, batched": ("GridSampler2DBackward0", "x = torch.rand(2, 1, 3, 4, requires_grad=True)\n"
                                            "y = (torch.rand(2, 2, 3, 2) * 2 - 1).requires_grad_()\n"
                                            "z = torch.nn.functional.grid_sample(x, y, align_corners=True)"),
    "affine grid, align_corners": ("AffineGridGeneratorBackward0", "x = torch.randn(1, 2, 3, requires_grad=True)\n"
                                   "z = torch.nn.functional.affine_grid(x, (1, 3, 2, 5), align_corners=True)"),
    "cumprod through a zero": ("CumprodBackward0", "x = torch.tensor([[2.0, 0.0, 3.0, -1.5], [0.5, 1.5, 0.0, 0.0]], "
                               "requires_grad=True)\nz = torch.cumprod(x, dim=-1)"),
    "det of a singular matrix": ("LinalgDetBackward0", "x = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], "
                                 "[0.5, -1.0, 2.0]], requires_grad=True)\nz = torch.linalg.det(x)"),
    "inv, batched": ("LinalgInvExBackward0", "x = (torch.randn(2, 3, 3) + 3 * torch.eye(3)).requires_grad_()\n"
                     "z = torch.linalg.inv(x)"),
    "cdist p=1, batched": ("CdistBackward0", "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                           "y = torch.randn(2, 5, 4, requires_grad=True)\nz = torch.cdist(x, y, p=1.0)"),
    "cdist p=3 with a zero distance": ("CdistBackward0", "x = torch.randn(3, 2, requires_grad=True)\n"
                                       "y = torch.cat([x.detach()[:1], torch.randn(2, 2)]).requires_grad_()\n"
                                       "z = torch.cdist(x, y, p=3.0)"),
    "cdist p=inf": ("CdistBackward0", "x = torch.randn(3, 4, requires_grad=True)\n"
                    "y = torch.randn(2, 4, requires_grad=True)\nz = torch.cdist(x, y, p=float('inf'))"),
    "addmm alpha beta": ("AddmmBackward0", "b = torch.randn(2, 3, requires_grad=True)\n"
                         "x = torch.randn(2, 4, requires_grad=True)\ny = torch.randn(4, 3, requires_grad=True)\n"
                         "z = torch.addmm(b, x, y, beta=0.2, alpha=0.6)"),
    "soft margin, sum": ("SoftMarginLossBackward0", "x = torch.randn(5, requires_grad=True)\n"
                         "y = torch.sign(torch.randn(5))\n"
                         "z = torch.nn.functional.soft_margin_loss(x, y, reduction='sum')"),
    "sign of an infinite gradient": ("SignBackward0", "x = torch.randn(4, requires_grad=True)\n"
                                     "z = torch.sign(x) * torch.tensor([1.0, float('inf'), 2.0, float('nan')])"),
    "logit with eps": ("LogitBackward0", "x = torch.tensor([0.01, 0.3, 0.97, 0.5], requires_grad=True)\n"
                       "z = torch.logit(x, eps=0.05)"),
    "roll flat": ("RollBackward0", "x = torch.randn(3, 4, requires_grad=True)\nz = torch.roll(x, 5)"),
    "topk smallest, last dim": ("TopkBackward0", "x = torch.randn(2, 3, 4, requires_grad=True)\n"
                                "z = torch.topk(x, 3, largest=False).values"),
    "multi margin p 2, weight, sum": ("MultiMarginLossBackward0", "x = torch.randn(3, 4, requires_grad=True)\n"
                                      "z = torch.nn.functional.multi_margin_loss(x, torch.tensor([1, 3, 0]), p=2, "
                                      "margin=0.7, weight=torch.rand(4), reduction='sum')"),
    "multi margin one sample, none": ("MultiMarginLossBackward0", "x = torch.randn(5, requires_grad=True)\n"
                                      "z = torch.nn.functional.multi_margin_loss(x, torch.tensor(2), "
                                      "reduction='none')"),
    "multilabel margin, a class listed twice": ("MultilabelMarginLossBackward0",
                                                "x = torch.randn(5, requires_grad=True)\n"
                                                "z = torch.nn.functional.multilabel_margin_loss(x, "
                                                "torch.tensor([1, 1, 0, 1, 4]))"),
    "multilabel margin, none": ("MultilabelMarginLossBackward0", "x = torch.randn(2, 4, requires_grad=True)\n"
                                "z = torch.nn.functional.multilabel_margin_loss(x, torch.tensor([[3, -1, 0, 0], "
                                "[0, 1, 2, 3]]), reduction='none')"),
    "glu last dim": ("GluBackward0", "x = torch.randn(3, 4, requires_grad=True)\nz = torch.nn.functional.glu(x)"),
    "mse double backward, sum": ("MseLossBackwardBackward0", "y = torch.randn((), requires_grad=True)\n"
                                 "x = torch.randn(2, 3, requires_grad=True)\n"
                                 "t = torch.randn(2, 3, requires_grad=True)\n"
                                 "z = torch.ops.aten.mse_loss_backward(y, x, t, 2)"),
    "mse double backward, none": ("MseLossBackwardBackward0", "y = torch.randn(2, 3, requires_grad=True)\n"
                                  "x = torch.randn(2, 3, requires_grad=True)\n"
                                 "t = torch.randn(2, 3, requires_grad=True)\n"
                                  "z = torch.ops.aten.mse_loss_backward(y, x, t, 0)"),
    "elu double backward, default": ("EluBackwardBackward0", "y = torch.randn(3, 4, requires_grad=True)\n"
                                     "x = torch.randn(3, 4, requires_grad=True)\n"
                                     "z = torch.ops.aten.elu_backward(y, 1.0, 1.0, 1.0, False, x)"),
    "sdpa causal scale": ("ScaledDotProductFlashAttentionForCpuBackward0",
                          "x = torch.randn(1, 2, 4, 3, requires_grad=True)\n"
                          "y = torch.randn(1, 2, 4, 3, requires_grad=True)\n"
                          "v = torch.randn(1, 2, 4, 3, requires_grad=True)\n"
                          "z = torch.nn.functional.scaled_dot_product_attention(x, y, v, is_causal=True, scale=0.7)"),
}
