// Package uniq appends to a slice only the values it does not hold yet:
// warnings, notes, tags and device lists that must name each thing once,
// in the order first seen.
package uniq

import "slices"

// Append appends each of vals that is not already in dst (nor earlier in
// vals), keeping the order.
func Append[T comparable](dst []T, vals ...T) []T {
	for _, v := range vals {
		if !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// AppendNonZero is Append leaving out the zero value ("" for strings).
func AppendNonZero[T comparable](dst []T, vals ...T) []T {
	var zero T
	for _, v := range vals {
		if v != zero && !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}
