// Package enet is the ENet transport: libenet 1.3.17 (Debian libenet-dev,
// `pkg-config libenet`) through a thin cgo binding of its own. It registers as "enet"
// and needs cgo on Linux; without cgo the factory returns an error.
//
// Threading: libenet is not thread-safe, so every ENetHost is driven by one goroutine
// that makes all libenet calls for that host. The server has one host for all players;
// each dialled Conn has its own host with one peer. Send copies the message into an
// ENetPacket (enet_packet_create only mallocs and copies, so it is safe from any
// goroutine), appends it to the host's queue and, if the host goroutine sleeps, wakes
// it through a channel. A dup of the host's socket is registered with Go's netpoller,
// and a small watcher goroutine turns each readability edge into a wake-up too, so the
// host goroutine reacts within microseconds to a datagram or a queued send without
// holding an OS thread while it sleeps. Awake, it hands the queued packets to
// enet_peer_send, calls enet_host_service(host, &event, 0) until it returns 0 (the
// socket is then drained, which edge-triggered readiness needs), and calls
// enet_host_flush if the handlers queued more: messages leave immediately rather than
// at the next service tick. It sleeps until ENet's next timer of any peer (earliest
// retransmission or ping, read from ENet's peer structs), at most 50 ms.
//
// (A first version slept in poll(2) on the socket plus an eventfd, one locked OS
// thread per host. With 100 players in one process it used about twice the CPU and
// seven times the context switches, and its loopback RTT was 3-6x higher at p50
// (about 300-700 us against 90-120 us), because every wake-up was an OS thread switch.)
//
// Channels: ENet channel 0 carries Reliable (ENET_PACKET_FLAG_RELIABLE: ordered,
// delivered). ENet channel 1 carries Unreliable as ENet's plain unreliable-sequenced
// packets: a packet older than one already delivered on the channel is dropped, never
// reordered. They are sent with ENET_PACKET_FLAG_UNRELIABLE_FRAGMENT so a message larger
// than one datagram (about 1.36 KB at ENet's 1400 B MTU) is split into unreliable
// fragments and dropped whole if one is lost; without the flag ENet 1.3.17 silently
// sends such messages as reliable fragments. Two ENet behaviours remain: after 65535
// unreliable packets on channel 1 ENet sends the next one reliably to reset its
// sequence numbers, and ENet's packet throttle drops unreliable packets while the RTT
// rises (option throttle). Both channels are native; received messages are copied
// into Go memory before the ENetPacket is destroyed.
//
// Sizes: Reliable messages up to 16 MiB (ENet's own limit is 32 MiB), Unreliable up to
// 64 KiB (one lost fragment loses the whole message, so larger unreliable messages are
// pointless). Send returns an error wrapping transport.ErrTooLarge above them. Send
// errors that ENet reports later, on the host goroutine (peer no longer connected),
// drop the message silently.
//
// Connections: Dial services the new peer until ENET_EVENT_TYPE_CONNECT, an ENet
// disconnect, or ctx's end (ENet has no "refused" signal: a dial to a dead port waits
// for ctx or timeout_ms). Close uses enet_peer_disconnect_later, so queued messages go
// first, and waits at most linger_ms for the acknowledgement before
// enet_peer_disconnect_now. Listener.Close disconnects every peer at once, lingers the
// same way, then destroys the host. The disconnect data tells the remote why: 1 the
// peer closed the connection, 2 the server shut down, 0 (ENet's own) a timeout.
//
// LibRTT returns ENet's smoothed peer->roundTripTime. It has millisecond resolution,
// is at least 1 ms, and ENet's integer smoothing (steps of 1/8 of the difference)
// leaves it up to 7 ms above a sub-millisecond loopback RTT, so it is only meaningful
// for RTTs of many milliseconds. It is refreshed on every received message and every
// 100 ms.
//
// Options (-param t.key=value):
//
//	max_peers   peer slots of the server host, 1..4095 (ENet's hard limit is 4095);
//	            default 1024. ENet walks every slot on each service pass, so the
//	            server's per-wake cost grows with this value.
//	sockbuf     SO_RCVBUF and SO_SNDBUF in bytes for every ENet socket; default
//	            4194304 (4 MiB; ENet's own is 256 KiB); 0 keeps ENet's. The kernel caps
//	            it at net.core.rmem_max/wmem_max.
//	timeout_ms  a peer that stops acknowledging is declared gone after this many ms
//	            (enet_peer_timeout minimum and maximum); default 3000, at least 100.
//	linger_ms   how long Close and Listener.Close wait for disconnect
//	            acknowledgements before resetting peers; default 250; 0 disconnects
//	            at once.
//	throttle    true (default, ENet's behaviour) lets ENet's packet throttle drop
//	            unreliable packets when the RTT rises; false disables it for both
//	            ends of each connection.
package enet
