# The smddp-bench image for SageMaker training jobs and other EFA clusters:
# a CUDA devel base, the EFA software (libfabric with the efa provider and
# Open MPI, from the EFA installer), the aws-ofi-nccl plugin so NCCL runs
# over EFA, and smddp-bench + smddp-diag built with CUDA and NCCL by
# scripts/build.sh, the script CI runs. SageMaker starts the image as
# `<entrypoint> train` on every host: scripts/sagemaker-entry.sh (see
# docs/deploy.md). No image can be built on the development machines, so
# every build step beyond package installs lives in scripts/build.sh.
#
#   docker build -t smddp-bench .
#   docker build --build-arg CUDA_IMAGE=nvidia/cuda:12.6.3-devel-ubuntu24.04 -t smddp-bench .

# CUDA 12.8 on Ubuntu 24.04: a published devel tag on a distribution the EFA
# installer supports. (The development machines have CUDA 13.0; its devel
# tags are not published for every distribution, and the driver on the
# training hosts must support the toolkit chosen here, so pick per fleet.)
# The devel images carry NCCL (libnccl-dev), which cmake/Cuda.cmake finds.
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-devel-ubuntu24.04
FROM ${CUDA_IMAGE}

ARG EFA_INSTALLER_VERSION=1.38.0
ARG AWS_OFI_NCCL_VERSION=1.14.0
ARG CUDA_ARCHITECTURES="80;90"
ENV DEBIAN_FRONTEND=noninteractive

# Build and run dependencies from Ubuntu. MPI and libfabric come from the
# EFA installer below, not from Ubuntu; openssh lets the leader's mpirun
# start ranks on the other hosts, as SageMaker's MPI images do.
RUN apt-get update -q && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config git curl ca-certificates \
      autoconf automake libtool python3 procps iproute2 openssh-client openssh-server \
      libhwloc-dev libfmt-dev libbenchmark-dev prometheus-cpp-dev nlohmann-json3-dev \
      libcli11-dev libyaml-cpp-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*

# EFA user space only: the kernel module and limits belong to the host.
RUN apt-get update -q && cd /tmp \
    && curl -fsSLO "https://efa-installer.amazonaws.com/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
    && tar -xf "aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
    && cd aws-efa-installer \
    && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify \
    && cd /tmp && rm -rf aws-efa-installer* \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/amazon/openmpi/bin:/opt/amazon/efa/bin:${PATH} \
    LD_LIBRARY_PATH=/opt/amazon/openmpi/lib:/opt/amazon/efa/lib:/opt/amazon/ofi-nccl/lib:${LD_LIBRARY_PATH} \
    PKG_CONFIG_PATH=/opt/amazon/efa/lib/pkgconfig:/opt/amazon/efa/lib64/pkgconfig

# NCCL's libfabric plugin, built against this CUDA and the EFA libfabric.
RUN git clone --depth 1 --branch "v${AWS_OFI_NCCL_VERSION}" https://github.com/aws/aws-ofi-nccl.git /tmp/aws-ofi-nccl \
    && cd /tmp/aws-ofi-nccl \
    && ./autogen.sh \
    && ./configure --prefix=/opt/amazon/ofi-nccl --with-libfabric=/opt/amazon/efa \
         --with-cuda=/usr/local/cuda --with-mpi=/opt/amazon/openmpi --enable-platform-aws --disable-tests \
    && make -j"$(nproc)" && make install \
    && rm -rf /tmp/aws-ofi-nccl

# Passwordless ssh between the job's containers: every host runs this same
# image, so one key pair serves them all (SageMaker's MPI images do the same).
RUN mkdir -p /run/sshd /root/.ssh \
    && ssh-keygen -A \
    && ssh-keygen -q -t ed25519 -N "" -f /root/.ssh/id_ed25519 \
    && cp /root/.ssh/id_ed25519.pub /root/.ssh/authorized_keys \
    && printf 'Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' >/root/.ssh/config \
    && chmod 600 /root/.ssh/config /root/.ssh/authorized_keys

COPY . /opt/smddp/src
RUN /opt/smddp/src/scripts/build.sh --build-dir /opt/smddp/build --cuda ON --no-tests --install /usr/local \
      -- -DMPI_HOME=/opt/amazon/openmpi "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
    && rm -rf /opt/smddp/build

# Runs as root in SageMaker; Open MPI needs both of these to agree.
# No FI_EFA_USE_DEVICE_RDMA (not needed with libfabric >= 1.18) and never
# RDMAV_FORK_SAFE (rdma-core's, can break things on newer kernels):
# https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md
ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ENTRYPOINT ["/usr/local/share/smddp/scripts/sagemaker-entry.sh"]
