#!/bin/sh
# collect_runtime.sh BIN_DIR SRC_DIR OUT_DIR: lays out under OUT_DIR what the runtime image holds,
# with their paths in the image: the five binaries in usr/local/bin, make_tokens, the sample task
# bundles in usr/share/coordinator/tasks, and the shared libraries the binaries load (ldd),
# copied under their directory's real path (/lib is a link to /usr/lib on Debian 12), so the image
# carries exactly what the build linked against, no version list to keep in step. glibc stays the
# base image's own: it must match its loader. Run by the Dockerfile's build stage, and by
# scripts/make_image.sh on the host for an image from binaries built outside (same Debian 12).
set -eu
bin=$1 src=$2 out=$3
mkdir -p "$out/usr/local/bin"
for b in coordinator green_agent purple_agent coordctl echo_agent; do
  cp "$bin/$b" "$out/usr/local/bin/"
done
ldd "$out"/usr/local/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u \
  | grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv)\.so|/ld-linux' \
  | while read -r lib; do
      dir=$(readlink -f "$(dirname "$lib")")
      mkdir -p "$out$dir" && cp -L "$lib" "$out$dir/"
    done
cp "$src/docker/make_tokens.sh" "$out/usr/local/bin/make_tokens"
mkdir -p "$out/usr/share/coordinator"
cp -r "$src/examples/tasks" "$out/usr/share/coordinator/"
