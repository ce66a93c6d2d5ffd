# gradtrace service image. The install steps are the Makefile's (`make install frontend`),
# the same ones `make run` uses: there is one recipe.
#
#   docker build -t gradtrace .                                   # CPU build of torch (default)
#   docker build -t gradtrace:cuda \
#     --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 \
#     --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .   # CUDA build for GPU hosts
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_EXTRA_INDEX_URL=${TORCH_INDEX} \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

# make, node/npm for the front-end build, g++ for the C++ capture core (`make native`);
# uidmap (newuidmap/newgidmap) for the rootless worker's user namespace; python3 for CUDA bases
# that lack it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make nodejs npm ca-certificates g++ uidmap \
      $(command -v python3 >/dev/null || echo python3 python3-venv python3-dev) \
 && rm -rf /var/lib/apt/lists/*

# Everything lives under /opt so the sandbox's per-job uids can read the interpreter and venv.
WORKDIR /opt/gradtrace
COPY . /opt/gradtrace
RUN make install frontend VENV=/opt/gradtrace/.venv \
 && rm -rf frontend/node_modules \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin gradtrace \
 && mkdir -p /data && chown gradtrace:gradtrace /data \
 && echo "gradtrace:200000000:100000" >> /etc/subuid && echo "gradtrace:200000000:100000" >> /etc/subgid
# NOTE [rootless worker] (backend/gradtrace/sandbox/userns.py): the subordinate range above is
# the one grant `gradtrace worker` needs to keep per-job uids without being root.

ENV GRADTRACE_HOST=0.0.0.0 \
    GRADTRACE_PORT=8000 \
    GRADTRACE_DATA_DIR=/data \
    PATH=/opt/gradtrace/.venv/bin:$PATH
USER gradtrace
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"
CMD ["gradtrace", "serve"]
