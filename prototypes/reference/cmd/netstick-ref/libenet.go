//go:build linux && cgo

package main

/*
#cgo pkg-config: libenet
#include <enet/enet.h>
*/
import "C"

import "fmt"

// linkedLibenet is the version of the libenet this process runs with: the shared library
// loaded at run time, which every process links whatever its transport, so that meta.json
// records what ran rather than what the build expected.
func linkedLibenet() (string, bool) {
	v := uint32(C.enet_linked_version()) // ENET_VERSION_CREATE: major<<16 | minor<<8 | patch
	return fmt.Sprintf("%d.%d.%d", v>>16&0xff, v>>8&0xff, v&0xff), true
}
