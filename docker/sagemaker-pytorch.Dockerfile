# smddp-bench on SageMaker's own PyTorch training image: the SMDDP library,
# NCCL, Open MPI (/opt/amazon/openmpi), libfabric with EFA (/opt/amazon/efa)
# and CUDA come from the base image, so SMDDP, NCCL and our engine are
# measured on exactly what a training job runs. smddp-bench and smddp-diag
# are built against those by scripts/sagemaker/build-pytorch-image.sh (CI
# runs it too); SAGEMAKER_PROGRAM names bench/torch/sagemaker_entry.py, which
# runs preflight, smddp-bench-torch --backend smddp,nccl and smddp-bench's
# engine rows, everything into /opt/ml/output/data (docs/deploy.md).
#
#   aws ecr get-login-password --region us-west-2 | docker login --username AWS \
#     --password-stdin 763104351884.dkr.ecr.us-west-2.amazonaws.com
#   docker build -f docker/sagemaker-pytorch.Dockerfile -t smddp-bench-pytorch .
#   docker build -f docker/sagemaker-pytorch.Dockerfile --build-arg REGION=us-east-1 \
#     --build-arg TAG=2.2.0-gpu-py310-cu121-ubuntu20.04-sagemaker -t smddp-bench-pytorch .
#
# Pick a TAG whose image has SMDDP installed (AWS's table of SMDDP's
# supported frameworks lists them); ACCOUNT is the Deep Learning Containers'
# registry account for REGION.
ARG REGION=us-west-2
ARG ACCOUNT=763104351884
ARG TAG=2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker
FROM ${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/pytorch-training:${TAG}

ARG CUDA_ARCHITECTURES="80;90"
ENV DEBIAN_FRONTEND=noninteractive

# Package installs only (build steps are in the script). The base image's
# gcc and cmake are too old for C++20 and CMake 3.25, and its Ubuntu lacks
# some of our libraries: a conda-forge prefix of their own holds the
# compiler, cmake, ninja and the C++ libraries, apart from the image's
# Python environment. MPI, libfabric, CUDA and NCCL stay the image's.
RUN apt-get update -q && apt-get install -y -q --no-install-recommends pkg-config procps iproute2 \
    && rm -rf /var/lib/apt/lists/*
RUN /opt/conda/bin/conda create -y -q -p /opt/smddp/toolchain --override-channels -c conda-forge \
      "cmake>=3.25" ninja "gcc_linux-64=12" "gxx_linux-64=12" pkg-config \
      cli11 nlohmann_json prometheus-cpp yaml-cpp fmt benchmark hwloc openssl \
    && /opt/conda/bin/conda clean -afy

COPY . /opt/smddp/src
RUN CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" /opt/smddp/src/scripts/sagemaker/build-pytorch-image.sh \
      --prefix /usr/local --toolchain /opt/smddp/toolchain --code-dir /opt/ml/code

# SageMaker's training toolkit (the base image's entrypoint) runs
# SAGEMAKER_PROGRAM from SAGEMAKER_SUBMIT_DIRECTORY with the job's
# hyperparameters as arguments. No FI_EFA_USE_DEVICE_RDMA (not needed with
# libfabric >= 1.18) and never RDMAV_FORK_SAFE (rdma-core's, can break things
# on newer kernels): https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md
ENV SAGEMAKER_SUBMIT_DIRECTORY=/opt/ml/code \
    SAGEMAKER_PROGRAM=sagemaker_entry.py \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
