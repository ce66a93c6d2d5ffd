# Every way to cut the graph: detach, .data, no_grad and inference_mode.
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x.exp()
d = y.detach()
raw = y.data
with torch.no_grad():
    s = y * 2
with torch.inference_mode():
    i = x + 1
out = (y * d).sum() + raw.sum() + s.sum()
out.backward()
print(d.requires_grad, raw.requires_grad, s.requires_grad, i.is_inference())
