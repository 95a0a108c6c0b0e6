// Package all registers every reference transport; import it for its side effects.
package all

import (
	// Each transport registers itself in init.
	_ "netstick/prototypes/reference/internal/transport/tcp"
)
