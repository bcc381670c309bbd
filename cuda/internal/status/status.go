// Package status names the status codes a C library returns (CUDA's
// CUresult, cuBLAS's cublasStatus_t, NVML's nvmlReturn_t) and words the
// error of a failed call, the same way for each library.
package status

import "fmt"

// Codes is one library's table of status codes.
type Codes[C ~int32] struct {
	// Library prefixes every message: "cuda", "nvml".
	Library string
	// Unnamed prefixes the number of a code without a name: "CUDA_ERROR_".
	Unnamed string
	// Names are the codes' names in the library's header.
	Names map[C]string
	// Hints say what to do about the codes a user meets on a badly set-up
	// machine.
	Hints map[C]string
	// Sentinels are the errors errors.Is matches for some codes.
	Sentinels map[C]error
}

// Name returns the code's name in the library's header, or Unnamed and
// its number.
func (t *Codes[C]) Name(c C) string {
	if n, ok := t.Names[c]; ok {
		return n
	}
	return fmt.Sprintf("%s%d", t.Unnamed, int32(c))
}

// Message is the one-line error of a failed call: "cuda: cuInit:
// CUDA_ERROR_NO_DEVICE (100): no CUDA GPU is visible: ...".
func (t *Codes[C]) Message(call string, c C) string {
	msg := fmt.Sprintf("%s: %s: %s (%d)", t.Library, call, t.Name(c), int32(c))
	if h, ok := t.Hints[c]; ok {
		msg += ": " + h
	}
	return msg
}

// Error is a failed call: the call, with its arguments where they help,
// and the code it returned.
type Error[C ~int32] struct {
	Call  string
	Code  C
	codes *Codes[C]
}

func (e *Error[C]) Error() string { return e.codes.Message(e.Call, e.Code) }

// Is lets errors.Is match the sentinel the table maps the code to.
func (e *Error[C]) Is(target error) bool {
	s, ok := e.codes.Sentinels[e.Code]
	return ok && s == target
}

// Check returns nil for code 0 (success in every library here) and the
// call's *Error otherwise.
func (t *Codes[C]) Check(call string, code int32) error {
	if code == 0 {
		return nil
	}
	return t.Err(call, C(code))
}

// Err returns the *Error of a call that returned c.
func (t *Codes[C]) Err(call string, c C) *Error[C] { return &Error[C]{Call: call, Code: c, codes: t} }
