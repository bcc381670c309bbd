package cuda

import "github.com/headroom-llm/headroom/cuda/internal/status"

// Result is a CUDA driver API status code (CUresult).
type Result int32

// Driver status codes that the probe checks for by value.
const (
	Success             Result = 0
	ErrorNotInitialized Result = 3
	ErrorNoDevice       Result = 100
	ErrorNotReady       Result = 600
)

// driverCodes names CUresult values as cuda.h does.
var driverCodes = status.Codes[Result]{Library: "cuda", Unnamed: "CUDA_ERROR_", Names: map[Result]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	35:  "CUDA_ERROR_INSUFFICIENT_DRIVER",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	218: "CUDA_ERROR_INVALID_PTX",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	400: "CUDA_ERROR_INVALID_HANDLE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	999: "CUDA_ERROR_UNKNOWN",
}, Hints: map[Result]string{
	34:  "libcuda.so.1 is the toolkit's stub, not the driver: put the driver's libcuda first on the loader path",
	35:  "the NVIDIA driver is older than this CUDA library needs: update the driver",
	100: "no CUDA GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES",
	803: "the driver's kernel module and user library versions differ: reboot or reinstall the driver",
}}

func (r Result) String() string { return driverCodes.Name(r) }

// DriverError is a failed CUDA driver API call.
type DriverError = status.Error[Result]

func check(call string, code int32) error { return driverCodes.Check(call, code) }

// Status is a cuBLAS status code (cublasStatus_t).
type Status int32

// blasCodes names cublasStatus_t values as cublas_api.h does.
var blasCodes = status.Codes[Status]{Library: "cuda", Unnamed: "CUBLAS_STATUS_", Names: map[Status]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}}

func (s Status) String() string { return blasCodes.Name(s) }

// BLASError is a failed cuBLAS call.
type BLASError = status.Error[Status]

func checkBLAS(call string, code int32) error { return blasCodes.Check(call, code) }
