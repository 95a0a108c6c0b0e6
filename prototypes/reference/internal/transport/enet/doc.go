// Package enet is the ENet transport: libenet 1.3.17 (Debian libenet-dev,
// `pkg-config libenet`) through a thin cgo binding of its own. It registers as "enet"
// and needs cgo on Linux; without cgo the factory returns an error.
//
// Threading: libenet is not thread-safe, so every ENetHost has a mutex that every
// libenet call on it holds. The server has one host for all players; each dialled
// Conn has its own host with one peer. Each host has a goroutine that services it:
// under the mutex it fetches a batch of ENet events in one cgo call (ns_events:
// queued events first, else one enet_host_service(host, 0) pass, which reads the
// socket until it is empty) and turns them into handler calls, copying received
// messages into Go memory; it then makes the calls with the mutex released, so
// handlers may Send and Close freely. It sleeps in Go's netpoller on an epoll
// descriptor that watches the socket for input only (a UDP socket registered
// directly would also wake the netpoller after every send), with a read deadline at
// ENet's next timer of any peer (earliest retransmission or ping, read from ENet's
// peer structs), at most 50 ms; other goroutines wake it by moving the deadline into
// the past. A datagram wakes it within microseconds without an OS thread blocked per
// host.
//
// Send copies the message into an ENetPacket and, on a dialled Conn, hands it to ENet
// and flushes it at once from the calling goroutine (one cgo call), lowering the
// host's read deadline if the message started a retransmission timer. On the server,
// Send hands the packet to ENet and the host goroutine flushes at the end of its
// pass, waking it if it sleeps: enet_host_flush walks every peer slot, so the echoes
// of one batch of events and the messages of one game tick share a flush.
//
// Stock ENet by default: the binding calls libenet's functions, reads its public
// structures where no function exposes a value (the socket, peer states and timers, to
// sleep until ENet's next timer), and never writes them or installs a callback, so an
// enet_host_service pass behaves as in ENet's own examples: it sends the
// acknowledgements of the datagrams it read before returning their events, and a
// handler's answer (an echo) follows in a second datagram. Three tunings that change
// ENet's protocol behaviour are options that only the manifest's variants set
// (prototype.yaml: enet+merged-acks, enet+fast-connect, enet+tuned; nstuned.c, the only
// C code that writes ENet's structures):
//
//	merged_acks   an intercept callback sees that the datagram just read is the last
//	              one waiting and makes the pass stop before its send (it swaps ENet's
//	              socket for an invalid descriptor until the pass returns); the events
//	              are handled and one flush sends each peer its acknowledgements and
//	              answers in one datagram.
//	seed_rtt      (client) at the connect event ENet's round-trip estimate is seeded
//	              with the handshake's own round trip, where ENet keeps 500 ms until its
//	              first acknowledgement.
//	hurry_verify  (server) a verify-connect is resent as soon as a datagram from the
//	              connecting player shows that its acknowledgement was lost, where ENet
//	              waits for its 0.5/1.5/3.5/7.5 s timer.
//
// (A first version slept in poll(2) on the socket plus an eventfd, one locked OS
// thread per host. With 100 players in one process it used about twice the CPU and
// seven times the context switches, and its loopback RTT was 3-6x higher at p50
// (about 300-700 us against 90-120 us), because every wake-up was an OS thread switch.
// A second one queued every Send to the host goroutine and woke it through a channel,
// and a watcher goroutine turned socket readiness into channel wake-ups; with 200
// players in one process the emulator used about 0.6 cores against 0.34 for tcp.)
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
// pointless). Send returns an error wrapping transport.ErrTooLarge above them, and
// transport.ErrClosed once the connection is closed or gone; a message ENet refuses
// because the peer is already disconnecting is dropped silently.
//
// Connections: Dial services the new peer until ENET_EVENT_TYPE_CONNECT, an ENet
// disconnect, or ctx's end (ENet has no "refused" signal: a dial to a dead port waits
// for ctx). An attempt ENet gives up on after timeout_ms (three sends of its connect
// command in 3.5 s) is followed by a new one from a fresh host until ctx's deadline,
// the player's connect budget; without a deadline there is one attempt. From the
// connect event until the connection has settled (ENet measured a round trip and
// acknowledged every reliable message sent before that) or the budget is over, the
// peer timeout is what is left of the budget, at least timeout_ms: the server accepts
// the player's first messages only once it has the acknowledgement of its
// verify-connect, which it retransmits after 0.5, 1.5 and 3.5 s, and a lost datagram
// there must not end the connection before the player's own connect deadline would.
// (These retries and the budget are the application's, as in a game's own connect
// loop; ENet's protocol is untouched.) seed_rtt and hurry_verify shorten that phase
// under loss; without loss neither changes anything: nothing is retransmitted.
//
// Close uses enet_peer_disconnect_later, so queued messages go first, and waits at
// most linger_ms for the acknowledgement before enet_peer_disconnect_now. Listener.Close disconnects every peer at once, lingers the
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
//	            Also the length of one connect attempt; a dialled connection uses it
//	            once settled or once the dial's budget is over (see Connections).
//	linger_ms   how long Close and Listener.Close wait for disconnect
//	            acknowledgements before resetting peers; default 250; 0 disconnects
//	            at once.
//	throttle    true (default, ENet's behaviour) lets ENet's packet throttle drop
//	            unreliable packets when the RTT rises; false disables it for both
//	            ends of each connection.
//	merged_acks, seed_rtt, hurry_verify
//	            the variants' tunings above; false (default, stock ENet) or true.
package enet
