"""The queue-backed runner: stateless API replicas hand jobs to ``gradtrace worker`` processes.

Built on `arq <https://arq-docs.helpmanual.io/>`_ over Redis (NOTE [why arq] in
:mod:`gradtrace.queue.keys`). The web side (:mod:`gradtrace.queue.runner`) never imports torch;
the worker side (:mod:`gradtrace.queue.worker`) owns a warm :class:`ForkServerPool` with every
sandbox layer, exactly as ``gradtrace serve`` does on one machine.
"""
