package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// Environment variables that override the library search. They name a file,
// not a directory: the library at that path is loaded and nothing else is tried.
const (
	EnvCUBLAS   = "HEADROOM_CUBLAS"
	EnvCUBLASLt = "HEADROOM_CUBLASLT"
	EnvLibCUDA  = "HEADROOM_LIBCUDA"
)

// Library names, newest first. libcuda comes with the NVIDIA driver and has
// had the same soname for every CUDA version; cuBLAS carries the toolkit's
// major version in its soname.
var (
	driverNames   = []string{"libcuda.so.1"}
	cublasNames   = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}
	cublasLtNames = []string{"libcublasLt.so.13", "libcublasLt.so.12"}
)

// LibraryError says that a shared library could not be loaded. Its message is
// one line that names the library, where it was looked for, and what to install.
type LibraryError struct {
	Library string   // e.g. "libcublas.so.13 (or .12, .11)"
	Tried   []string // directories or paths searched, in order
	Detail  string   // the loader's message for a file that exists but failed to load
	Hint    string   // what the user should do
}

func (e *LibraryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cuda: cannot load %s", e.Library)
	if e.Detail != "" {
		fmt.Fprintf(&b, " (%s)", e.Detail)
	} else if len(e.Tried) > 0 {
		fmt.Fprintf(&b, " (looked in: %s)", strings.Join(e.Tried, ", "))
	}
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// ErrLibraryNotFound is matched by errors.Is for every *LibraryError.
var ErrLibraryNotFound = errors.New("cuda: library not found")

// Is lets errors.Is(err, ErrLibraryNotFound) match.
func (e *LibraryError) Is(target error) bool { return target == ErrLibraryNotFound }

const (
	driverHint = "install the NVIDIA driver (nvidia-smi must work); only `headroom probe` needs a GPU"
	cublasHint = "install cuBLAS (the CUDA toolkit's libcublas, or `pip install nvidia-cublas`) or set " +
		EnvCUBLAS + "=/path/to/libcublas.so"
	cublasLtHint = "install cuBLASLt (it comes with cuBLAS: the CUDA toolkit, or `pip install nvidia-cublas`) or set " +
		EnvCUBLASLt + "=/path/to/libcublasLt.so; only the FP8 measurements need it"
)

// LibraryPaths says where to load the libraries from. An empty field means
// "search": the override variable, then the loader path, then the usual
// CUDA install directories and pip wheels.
type LibraryPaths struct {
	Driver   string // path to libcuda.so.1
	CUBLAS   string // path to libcublas.so.N
	CUBLASLt string // path to libcublasLt.so.N
}

// searchDirs lists the directories tried after the loader's own search
// path, in order: CUDA_HOME/CUDA_PATH, the default toolkit install, its
// per-architecture targets directory, and NVIDIA's pip wheels in the usual
// Python environments.
func searchDirs() []string {
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if root := os.Getenv(env); root != "" {
			dirs = append(dirs, filepath.Join(root, "lib64"), filepath.Join(root, "lib"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	if t := targetsTriple(); t != "" {
		dirs = append(dirs, "/usr/local/cuda/targets/"+t+"/lib")
	}
	var sitePackages []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if root := os.Getenv(env); root != "" {
			sitePackages = append(sitePackages, globDirs(filepath.Join(root, "lib", "python3*", "site-packages"))...)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		sitePackages = append(sitePackages, globDirs(filepath.Join(home, ".local", "lib", "python3*", "site-packages"))...)
	}
	sitePackages = append(sitePackages, globDirs("/usr/local/lib/python3*/dist-packages")...)
	sitePackages = append(sitePackages, globDirs("/usr/local/lib/python3*/site-packages")...)
	sitePackages = append(sitePackages, "/usr/lib/python3/dist-packages")
	for _, sp := range sitePackages {
		dirs = append(dirs, filepath.Join(sp, "nvidia", "cu13", "lib"), filepath.Join(sp, "nvidia", "cublas", "lib"))
	}
	return dirs
}

func targetsTriple() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux"
	case "arm64":
		return "sbsa-linux"
	}
	return ""
}

func globDirs(pattern string) []string {
	m, _ := filepath.Glob(pattern) // the only error is a malformed pattern, and ours are constant
	return m
}

// openLibrary loads the first of names that can be found: the explicit path
// (from LibraryPaths or the override variable) if one is given, otherwise
// each name through the loader, then in each of dirs.
func openLibrary(label string, names []string, explicit, envVar string, dirs []string, hint string) (uintptr, string, error) {
	if explicit == "" && envVar != "" {
		explicit = os.Getenv(envVar)
	}
	if explicit != "" {
		h, err := dlopen(explicit)
		if err != nil {
			detail := err.Error()
			if _, statErr := os.Stat(explicit); statErr != nil {
				detail = explicit + " does not exist"
			}
			if envVar != "" && os.Getenv(envVar) == explicit {
				detail += ", from " + envVar
			}
			return 0, "", &LibraryError{Library: label, Detail: detail, Hint: hint}
		}
		return h, explicit, nil
	}
	var firstFailure string
	for _, name := range names {
		if h, err := dlopen(name); err == nil {
			return h, name, nil
		}
		for _, dir := range dirs {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			h, err := dlopen(p)
			if err == nil {
				return h, p, nil
			}
			if firstFailure == "" {
				firstFailure = fmt.Sprintf("%s exists but failed to load: %v", p, err)
			}
		}
	}
	tried := append([]string{"the loader path"}, dirs...)
	return 0, "", &LibraryError{Library: label, Tried: tried, Detail: firstFailure, Hint: hint}
}

func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// symbol binds the C function name in lib to the Go function pointer fptr,
// returning an error rather than panicking when the symbol is missing (an
// older library than we expect).
func symbol(lib uintptr, libName string, fptr any, name string) error {
	addr, err := purego.Dlsym(lib, name)
	if err != nil || addr == 0 {
		return fmt.Errorf("cuda: %s has no symbol %s (library too old?)", libName, name)
	}
	purego.RegisterFunc(fptr, addr)
	return nil
}
