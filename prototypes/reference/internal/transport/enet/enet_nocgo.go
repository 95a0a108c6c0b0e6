//go:build !(linux && cgo)

package enet

import (
	"errors"

	"netstick/prototypes/reference/internal/transport"
)

// Without cgo (or off Linux) libenet cannot be linked; the name stays registered so
// the error says why rather than "unknown transport".
func init() {
	transport.Register("enet", func(transport.Options) (transport.Transport, error) {
		return nil, errors.New("enet transport unavailable: built without cgo or not on Linux (needs libenet-dev)")
	})
}
