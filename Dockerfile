# One image for the whole stack: coordinator, green_agent, purple_agent, coordctl and echo_agent
# are on PATH; the command picks one (`docker run IMAGE coordinator --data_dir=/data`). Every
# flag can also come from the environment (COORDINATOR_DATA_DIR=/data, ...; README "Flags from
# the environment"). See docker-compose.yml and README "Containers".

# --- Build stage: Debian 12 with the install script and the build command of the README and CI.
FROM debian:bookworm AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# The dependencies first, so that a source change does not reinstall them.
COPY scripts/install_deps.sh scripts/install_deps.sh
RUN ./scripts/install_deps.sh
COPY . .
RUN make build BUILD_DIR=build
# The shared libraries the binaries load (ldd), copied under their directory's real path
# (/lib is a link to /usr/lib here) into /runtime, so the runtime stage carries exactly what the
# build linked against. glibc stays the runtime image's own: it must match its loader.
RUN mkdir -p /runtime/usr/local/bin \
 && for b in coordinator green_agent purple_agent coordctl echo_agent; do \
      cp build/bin/$b /runtime/usr/local/bin/; \
    done \
 && ldd /runtime/usr/local/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u \
      | grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv)\.so|/ld-linux' \
      | while read -r lib; do \
          dir=$(readlink -f "$(dirname "$lib")"); \
          mkdir -p "/runtime$dir" && cp -L "$lib" "/runtime$dir/"; \
        done \
 && cp docker/make_tokens.sh /runtime/usr/local/bin/make_tokens \
 && mkdir -p /runtime/usr/share/coordinator && cp -r examples/tasks /runtime/usr/share/coordinator/

# --- Runtime stage: the binaries, their shared libraries and the sample task bundles.
FROM debian:bookworm-slim
COPY --from=build /runtime/ /
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
