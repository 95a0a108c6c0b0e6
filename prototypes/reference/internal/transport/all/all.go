// Package all registers every reference transport; import it for its side effects.
package all

import (
	// Each transport registers itself in init.
	_ "netstick/prototypes/reference/internal/transport/enet"
	_ "netstick/prototypes/reference/internal/transport/kcp"
	_ "netstick/prototypes/reference/internal/transport/quic"
	_ "netstick/prototypes/reference/internal/transport/tcp"
	_ "netstick/prototypes/reference/internal/transport/udp"
	_ "netstick/prototypes/reference/internal/transport/webrtc"
	_ "netstick/prototypes/reference/internal/transport/ws"
)
