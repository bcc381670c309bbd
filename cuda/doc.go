// Package cuda binds the few parts of the CUDA driver API and cuBLAS that
// headroom's probe needs, without cgo: the libraries are opened at run time
// with purego, so the headroom binary builds with CGO_ENABLED=0 and starts
// on machines that have no GPU. Only opening the driver fails there, with a
// one-line error naming what to install.
//
// The package also embeds two PTX kernels (kernels/kernels.cu): a 16-byte
// vectorised device-to-device copy and a read-only sum, used to measure
// memory bandwidth.
package cuda
