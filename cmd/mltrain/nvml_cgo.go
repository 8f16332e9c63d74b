//go:build cgo

package main

// nvmlCompiledIn: internal/gpu's NVML backend needs cgo (go-nvml dlopens
// the library), so it is in this binary exactly when cgo was on.
const nvmlCompiledIn = true
