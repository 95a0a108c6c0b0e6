//go:build !(linux && cgo)

package main

// linkedLibenet: without cgo the binary has no libenet (the enet transport is unavailable).
func linkedLibenet() (string, bool) { return "", false }
