# One image for the whole stack: coordinator, green_agent, purple_agent, coordctl and echo_agent
# are on PATH; the command picks one (`docker run IMAGE coordinator --data_dir=/data`). Every
# flag can also come from the environment (COORDINATOR_DATA_DIR=/data, ...; docs/configuration.md "Flags from
# the environment"). See docker-compose.yml and docs/containers.md.

# Where the runtime stage takes its files from: build (from source) or prebuilt.
ARG RUNTIME_FROM=build

# --- Build stage: Debian 12 with the install script and the build command of the README and CI.
FROM debian:bookworm AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# The dependencies first, so that a source change does not reinstall them.
COPY scripts/install_deps.sh scripts/install_deps.sh
RUN ./scripts/install_deps.sh
COPY . .
RUN make build BUILD_DIR=build
# What the runtime stage holds, laid out under /runtime (docker/collect_runtime.sh): the binaries,
# the shared libraries they load (ldd) and the sample task bundles.
RUN ./docker/collect_runtime.sh build/bin . /runtime

# --- Binaries built outside the image (`make image IMAGE_FROM=build/bin`, on Debian 12 too, as
# CI does): scripts/make_image.sh lays them out on the host (docker/collect_runtime.sh) in a
# directory that is the whole context of that build, and selects this stage with
# --build-arg RUNTIME_FROM=prebuilt; the build stage is skipped. (In a build from source this
# stage copies the source and is not used; podman 4.3 runs it, with --skip-unused-stages=false,
# because it cannot tell that `FROM ${RUNTIME_FROM}` needs the build stage.)
FROM scratch AS prebuilt
# make_image.sh removes this stage's image (podman keeps it, untagged) by this label.
LABEL coordinator.stage=prebuilt
COPY . /runtime/

FROM ${RUNTIME_FROM} AS runtime-files

# --- Runtime stage: the binaries, their shared libraries and the sample task bundles.
FROM debian:bookworm-slim
COPY --from=runtime-files /runtime/ /
RUN useradd --system --create-home --home-dir /var/lib/coordinator coordinator \
 && mkdir -p /data /workspaces /secrets && chown coordinator /data /workspaces /secrets
USER coordinator
WORKDIR /var/lib/coordinator
# Logs are JSON lines on stderr (--log_format=text for people).
ENV COORDINATOR_DATA_DIR=/data \
    COORDINATOR_TOKEN_FILE=/secrets/tokens.json \
    GREEN_AGENT_TASKS_DIR=/usr/share/coordinator/tasks \
    GREEN_AGENT_WORKSPACES_DIR=/workspaces
VOLUME ["/data"]
EXPOSE 50051 8080
HEALTHCHECK --interval=10s --timeout=5s --retries=3 \
  CMD ["coordctl", "--timeout", "3s", "health"]
# Beyond loopback the coordinator requires a token file: the default command makes one in /secrets
# on first start (mount a volume there to keep it, or your own tokens.json), then runs the server.
CMD ["sh", "-c", "make_tokens /secrets && exec \"$0\" \"$@\"", "coordinator", "--listen=0.0.0.0:50051", "--http_listen=0.0.0.0:8080"]
