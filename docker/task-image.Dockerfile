# The sample task image, coordinator-task:latest (`make task-image`, docker/make_task_image.sh):
# what an evaluation's commands run in when the green agent starts a container per evaluation
# (docs/containers.md, --env_start_template). The green agent mounts the evaluation's workspace
# (src/, the crash report, shared/) on /workspace; the image brings the tools to work on it: gcc
# with AddressSanitizer, and each sample task's program built as its build.sh builds it, in
# /opt/tasks/<task id>/program (the crash reproduces inside: `/opt/tasks/<id>/program <args>`).
# The ground truths and the scripted answers are not in the build context: the agent under test
# works in this container.
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
COPY tasks/ /opt/tasks/
RUN for t in /opt/tasks/*; do \
      gcc -g -O0 -fsanitize=address -fno-omit-frame-pointer -o "$t/program" "$t"/src/*.c || exit 1; \
    done \
 && echo "coordinator sample task image: $(ls /opt/tasks | tr '\n' ' ')" > /etc/coordinator-task-image
# What the task's instructions promise (green_agent/evaluation.cc): the workspace is the working
# directory and $SHARED_DIR its shared/ folder.
ENV WORKSPACE=/workspace SHARED_DIR=/workspace/shared
WORKDIR /workspace
CMD ["sleep", "infinity"]
