//go:build linux && cgo

#include "nsenet.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

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
                         unsigned char d, enet_uint16 port, size_t peers, int sockbuf) {
	ENetAddress addr = ns_addr(a, b, c, d, port);
	ENetHost *h = enet_host_create(bind ? &addr : NULL, peers, 2, 0, 0);
	if (h == NULL) return NULL;
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

void ns_release(ns_event *evs, int n) {
	for (int i = 0; i < n; i++) {
		if (evs[i].packet != NULL) {
			enet_packet_destroy(evs[i].packet);
			evs[i].packet = NULL;
		}
	}
}

// ns_events destroys the packets of the previous batch (prev events), then collects up
// to max events from enet_host_service(h, 0). Each call first hands out events ENet has
// queued; once the queue is empty it makes one pass of send, receive (up to 256
// datagrams) and send. A pass that yields nothing means the socket is drained, which
// the edge-triggered readiness the host waits on relies on; a pass that read 256
// datagrams may have left some, so it is repeated. *more is set when max was reached.
int ns_events(ENetHost *h, ns_event *evs, int max, int prev, int *more) {
	ENetEvent e;
	int n = 0;
	ns_release(evs, prev);
	*more = 0;
	for (;;) {
		if (n == max) {
			*more = 1;
			break;
		}
		enet_uint32 before = h->totalReceivedPackets;
		int r = enet_host_service(h, &e, 0);
		if (r <= 0) {
			// -1 is a socket error (ENet retries on the next pass); 0 with 256
			// datagrams read means the receive loop stopped at its batch limit.
			if (r == 0 && h->totalReceivedPackets - before >= 256) continue;
			break;
		}
		ns_event *o = &evs[n++];
		o->type = (int)e.type;
		o->peer = e.peer != NULL ? (int)(e.peer - h->peers) : -1;
		o->channel = e.channelID;
		o->data = e.data;
		o->packet = e.packet;
	}
	return n;
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

int ns_dup_socket(ENetHost *h) { return fcntl(h->socket, F_DUPFD_CLOEXEC, 0); }

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

