# Sourced by build.sh and test.sh: nvcc is often outside PATH; the CUDA
# backend is built whenever it exists.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
