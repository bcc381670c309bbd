#!/bin/sh
# Regenerates kernels.ptx from kernels.cu with Debian's clang 14
# (apt-get install clang-14); run from this directory: ./gen.sh
# The PTX targets sm_80 with PTX ISA 7.5, the newest clang 14 knows; the
# driver JIT-compiles it for the GPU at hand (sm_90 on an H100/H200), and a
# copy and a sum need no instruction newer than sm_80.
set -eu
{
	echo "// Generated from kernels.cu by gen.sh: do not edit."
	echo "// clang-14 -x cuda --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib -Xclang -target-feature -Xclang +ptx75 -O3 -S -o - kernels.cu"
	clang-14 -x cuda --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib \
		-Xclang -target-feature -Xclang +ptx75 -O3 -S -o - kernels.cu
} >kernels.ptx
