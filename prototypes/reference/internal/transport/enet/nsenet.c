//go:build linux && cgo

#include "nsenet.h"

#include <enet/time.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int ns_init(void) { return enet_initialize(); }

static ENetAddress ns_addr(unsigned char a, unsigned char b, unsigned char c,
                           unsigned char d, enet_uint16 port) {
	ENetAddress addr;
	unsigned char ip[4] = {a, b, c, d};
	memset(&addr, 0, sizeof addr);
	// ENetAddress.host holds the address in network byte order, as in s_addr.
	memcpy(&addr.host, ip, 4);
	addr.port = port;
	return addr;
}

ENetHost *ns_host_create(int bind, unsigned char a, unsigned char b, unsigned char c,
                         unsigned char d, enet_uint16 port, size_t peers, int sockbuf,
                         int tuning) {
	ENetAddress addr = ns_addr(a, b, c, d, port);
	ENetHost *h = enet_host_create(bind ? &addr : NULL, peers, 2, 0, 0);
	if (h == NULL) return NULL;
	// Stock ENet unless a variant asks for a tuning (nstuned.c).
	if (tuning != 0) ns_tuned_install(h);
	// ENet sets 256 KiB; one server socket carries every player, so ask for more.
	// The kernel silently caps the value at net.core.{r,w}mem_max.
	if (sockbuf > 0) {
		int saved = errno;
		enet_socket_set_option(h->socket, ENET_SOCKOPT_RCVBUF, sockbuf);
		enet_socket_set_option(h->socket, ENET_SOCKOPT_SNDBUF, sockbuf);
		errno = saved;
	}
	return h;
}

void ns_host_addr(ENetHost *h, unsigned char *ip4, enet_uint16 *port) {
	memcpy(ip4, &h->address.host, 4);
	*port = h->address.port;
}

ENetPeer *ns_connect(ENetHost *h, unsigned char a, unsigned char b, unsigned char c,
                     unsigned char d, enet_uint16 port) {
	ENetAddress addr = ns_addr(a, b, c, d, port);
	return enet_host_connect(h, &addr, 2, 0);
}

void ns_peer_setup(ENetPeer *p, enet_uint32 timeout_ms, int throttle) {
	// Minimum and maximum both at timeout_ms: a peer that stops acknowledging is
	// dropped timeout_ms after its first overdue reliable command (pings every 500 ms
	// keep one in flight), instead of ENet's 5-30 s.
	enet_peer_timeout(p, 0, timeout_ms, timeout_ms);
	if (!throttle) {
		// Acceleration and deceleration 0 keep packetThrottle at its full initial
		// value, so ENet never drops unreliable packets when the RTT rises. ENet sends
		// the setting to the remote peer, which applies it too.
		enet_peer_throttle_configure(p, ENET_PEER_PACKET_THROTTLE_INTERVAL, 0, 0);
	}
}

void ns_peer_addr(ENetPeer *p, unsigned char *ip4, enet_uint16 *port) {
	memcpy(ip4, &p->address.host, 4);
	*port = p->address.port;
}

// ns_peer_settled is 1 once ENet has measured p's round trip (lastReceiveTime is set
// only by acknowledgements in ENet 1.3.17, and starts at 0) and no reliable command is
// awaiting its acknowledgement: every command sent before the measurement, whose
// retransmission timer started from ENet's default 500 ms estimate, is acknowledged.
int ns_peer_settled(ENetPeer *p) {
	return p->lastReceiveTime != 0 && enet_list_empty(&p->sentReliableCommands);
}

void ns_release(ns_event *evs, int n) {
	for (int i = 0; i < n; i++) {
		if (evs[i].packet != NULL) {
			enet_packet_destroy(evs[i].packet);
			evs[i].packet = NULL;
		}
	}
}

// ns_events destroys the packets of the previous batch (prev events), then collects up
// to max events. Queued events come from enet_host_check_events, which does no I/O;
// only when ENet's dispatch queue is empty does enet_host_service(h, 0) make a pass of
// send, receive (up to 256 datagrams), send and dispatch. One such pass per call is
// enough: its receive loop reads until the socket is empty, which the edge-triggered
// readiness the host waits on relies on, unless it stopped at 256 datagrams or a
// connect or disconnect event cut it short (those are returned from inside the pass,
// possibly before the receive loop), so then another pass follows. *more is set when
// max was reached; *pass when a pass completed, which also sent whatever was queued
// before the call; *flush when ENet may hold unsent commands (merged-acks cut the pass
// before its final send, nstuned.c). *wait is ns_next_timer(h, max_ms) after the last
// pass. tuning: the host's NS_TUNE_* bits (0: stock ENet).
int ns_events(ENetHost *h, int tuning, ns_event *evs, int max, int prev, int max_ms,
              int *more, int *pass, int *flush, int *wait) {
	ENetEvent e;
	int n = 0, errors = 0;
	ns_release(evs, prev);
	*more = 0;
	*pass = 0;
	*flush = 0;
	for (;;) {
		if (n == max) {
			*more = 1;
			break;
		}
		int r = enet_host_check_events(h, &e);
		if (r == 0) {
			if (*pass) break;
			enet_uint32 before = h->totalReceivedPackets;
			ns_tuned_pass_begin(h, tuning);
			r = enet_host_service(h, &e, 0);
			if (ns_tuned_pass_end(h)) {
				// merged-acks cut the pass after the last datagram: the read of the
				// invalid descriptor failed (r == -1), or that datagram's connect or
				// disconnect event came first. Either way the socket was empty.
				*pass = 1;
				*flush = 1;
				if (r < 0) continue;
			} else {
				// A socket error (or a datagram too large for ENet's buffer, which the
				// failed read consumed) ends the pass early: try again a few times so
				// the socket is drained, then leave it to the next wake-up.
				if (r < 0) {
					*flush = 1;
					if (++errors < 4) continue;
					break;
				}
				if ((r == 0 || e.type == ENET_EVENT_TYPE_RECEIVE) &&
				    h->totalReceivedPackets - before < 256)
					*pass = 1;
				else
					*flush = 1; // cut short by an event: the final send may be due
			}
			if (r == 0) continue;
		} else if (r < 0) {
			break;
		}
		ns_event *o = &evs[n++];
		o->type = (int)e.type;
		o->peer = e.peer != NULL ? (int)(e.peer - h->peers) : -1;
		o->channel = e.channelID;
		o->data = e.data;
		o->packet = e.packet;
	}
	*wait = ns_next_timer(h, max_ms);
	return n;
}

// ns_send hands one message to ENet for peer p: the packet pkt, or one made from
// data if pkt is NULL. With flush it is sent at once (enet_host_flush) and *wait gets
// ns_next_timer(h, max_ms), since the send may have started a retransmission timer.
// It returns 0, -1 if ENet refused the packet (peer not connected; the packet is
// destroyed) or -2 if no packet could be allocated.
int ns_send(ENetHost *h, ENetPeer *p, enet_uint8 ch, ENetPacket *pkt, const void *data,
            size_t len, enet_uint32 flags, int flush, int max_ms, int *wait) {
	if (pkt == NULL) {
		pkt = enet_packet_create(data, len, flags);
		if (pkt == NULL) return -2;
	}
	if (enet_peer_send(p, ch, pkt) != 0) {
		// enet_peer_send takes the packet only on success.
		if (pkt->referenceCount == 0) enet_packet_destroy(pkt);
		return -1;
	}
	if (flush) {
		enet_host_flush(h);
		*wait = ns_next_timer(h, max_ms);
	}
	return 0;
}

// ns_flush sends everything queued and returns ns_next_timer(h, max_ms).
int ns_flush(ENetHost *h, int max_ms) {
	enet_host_flush(h);
	return ns_next_timer(h, max_ms);
}

// ns_next_timer returns the ms until ENet's next timer of any peer is due (the
// earliest retransmission, or a ping when nothing is in flight), between 1 and max_ms.
int ns_next_timer(ENetHost *h, int max_ms) {
	enet_uint32 now = enet_time_get();
	int wait = max_ms;
	for (ENetPeer *p = h->peers; p < &h->peers[h->peerCount]; ++p) {
		int d;
		if (p->state == ENET_PEER_STATE_DISCONNECTED || p->state == ENET_PEER_STATE_ZOMBIE)
			continue;
		if (!enet_list_empty(&p->sentReliableCommands))
			d = (int)(int32_t)(p->nextTimeout - now);
		else if (p->state == ENET_PEER_STATE_CONNECTED)
			d = (int)(int32_t)(p->lastReceiveTime + p->pingInterval - now);
		else
			continue;
		if (d < wait) wait = d;
	}
	// ENet's clock has 1 ms resolution; a timer due "now" is handled on the next pass.
	return wait < 1 ? 1 : wait;
}

// ns_epoll_socket returns a non-blocking epoll descriptor watching only h's socket,
// for input, edge-triggered. Go's netpoller waits on it instead of on the socket
// itself: it would register the socket for output too, and Linux signals output
// readiness to a UDP socket's waiters every time one of its sent datagrams is freed,
// so every send would wake the netpoller for nothing. An epoll descriptor only ever
// reports input readiness, and each datagram arriving on the socket wakes its waiters.
int ns_epoll_socket(ENetHost *h) {
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) return -1;
	struct epoll_event ev;
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN | EPOLLET;
	ev.data.fd = h->socket;
	int fl = fcntl(ep, F_GETFL);
	if (fl < 0 || fcntl(ep, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, h->socket, &ev) < 0) {
		int saved = errno;
		close(ep);
		errno = saved;
		return -1;
	}
	return ep;
}

int ns_active_peers(ENetHost *h) {
	int n = 0;
	for (ENetPeer *p = h->peers; p < &h->peers[h->peerCount]; ++p)
		if (p->state != ENET_PEER_STATE_DISCONNECTED) n++;
	return n;
}

void ns_disconnect_all_now(ENetHost *h, enet_uint32 data) {
	for (ENetPeer *p = h->peers; p < &h->peers[h->peerCount]; ++p)
		if (p->state != ENET_PEER_STATE_DISCONNECTED) enet_peer_disconnect_now(p, data);
}

