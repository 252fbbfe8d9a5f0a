# SMDDP_WITH_CUDA=AUTO|ON|OFF. AUTO enables CUDA when nvcc and NCCL are found;
# ON fails when they are missing; OFF never looks. The CPU build never needs them.
set(SMDDP_CUDA_ENABLED OFF)
if(NOT SMDDP_WITH_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  find_path(SMDDP_NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include /usr/local/cuda/lib ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(SMDDP_NCCL_LIBRARY nccl HINTS /usr/local/cuda/lib /usr/local/cuda/lib64 ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(CMAKE_CUDA_COMPILER AND SMDDP_NCCL_INCLUDE_DIR AND SMDDP_NCCL_LIBRARY)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    # One CUDA runtime per binary, the shared one: nvcc's default (static) for
    # targets with .cu objects plus CUDA::cudart (shared) elsewhere would link
    # two runtimes with separate state into one program. Shared also lets a
    # test interpose the runtime (tests/e2e/gpu/fake_cuda.cc) and the device
    # bundle carry libcudart.so.13 beside the binaries.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    add_library(smddp_nccl INTERFACE)
    target_include_directories(smddp_nccl INTERFACE ${SMDDP_NCCL_INCLUDE_DIR})
    target_link_libraries(smddp_nccl INTERFACE ${SMDDP_NCCL_LIBRARY} CUDA::cudart)
    set(SMDDP_CUDA_ENABLED ON)
    message(STATUS "smddp: CUDA ${CUDAToolkit_VERSION} and NCCL (${SMDDP_NCCL_LIBRARY}) enabled")
  elseif(SMDDP_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SMDDP_WITH_CUDA=ON but nvcc or NCCL was not found")
  else()
    message(STATUS "smddp: CUDA or NCCL not found; building host-only")
  endif()
endif()
