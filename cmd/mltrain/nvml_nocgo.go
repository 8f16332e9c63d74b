//go:build !cgo

package main

// nvmlCompiledIn: without cgo internal/gpu has only its NVML stub.
const nvmlCompiledIn = false
