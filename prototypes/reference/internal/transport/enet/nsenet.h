// Thin C helpers around libenet 1.3.17 for the enet transport. The stock binding's
// (nsenet.c) bundle several libenet calls into one cgo call or read ENet's public
// structures (socket, peer timers and states) where no function exposes them; they
// never write them. The variants' tunings (nstuned.c) are the only helpers that change
// ENet's behaviour. Every helper that takes an ENetHost must be called with that
// host's lock held: libenet is not thread-safe.

#ifndef NSENET_H
#define NSENET_H

#include <stddef.h>
#include <enet/enet.h>

// ns_event is one ENet event, flattened for Go (peer as an index into host->peers).
// packet stays owned by the event array until the next ns_events call (or
// ns_release), which destroys it; Go copies the data out before then.
typedef struct {
	int type;
	int peer;      // index into host->peers, -1 if none
	int channel;
	enet_uint32 data;
	ENetPacket *packet;
} ns_event;

// NS_TUNE_* are the tunings of the enet variants, a host's bits (0: stock ENet).
// merged-acks holds a service pass's acknowledgements back and sends them with the
// answers in one datagram; hurry-verify (server) resends a verify-connect as soon as its
// acknowledgement is seen lost. fast-connect is hurry-verify plus ns_seed_rtt (client).
#define NS_TUNE_MERGED_ACKS 1
#define NS_TUNE_HURRY_VERIFY 2

int ns_init(void);
ENetHost *ns_host_create(int bind, unsigned char a, unsigned char b, unsigned char c,
                         unsigned char d, enet_uint16 port, size_t peers, int sockbuf,
                         int tuning);
void ns_host_addr(ENetHost *h, unsigned char *ip4, enet_uint16 *port);
ENetPeer *ns_connect(ENetHost *h, unsigned char a, unsigned char b, unsigned char c,
                     unsigned char d, enet_uint16 port);
void ns_peer_setup(ENetPeer *p, enet_uint32 timeout_ms, int throttle);
void ns_peer_addr(ENetPeer *p, unsigned char *ip4, enet_uint16 *port);
int ns_peer_settled(ENetPeer *p);
int ns_events(ENetHost *h, int tuning, ns_event *evs, int max, int prev, int max_ms,
              int *more, int *pass, int *flush, int *wait);
int ns_send(ENetHost *h, ENetPeer *p, enet_uint8 ch, ENetPacket *pkt, const void *data,
            size_t len, enet_uint32 flags, int flush, int max_ms, int *wait);
int ns_flush(ENetHost *h, int max_ms);
void ns_release(ns_event *evs, int n);
int ns_next_timer(ENetHost *h, int max_ms);
int ns_active_peers(ENetHost *h);
void ns_disconnect_all_now(ENetHost *h, enet_uint32 data);
int ns_epoll_socket(ENetHost *h);

// The variants' tunings (nstuned.c).
void ns_tuned_install(ENetHost *h);
void ns_tuned_pass_begin(ENetHost *h, int tuning);
int ns_tuned_pass_end(ENetHost *h);
void ns_seed_rtt(ENetHost *h, ENetPeer *p, enet_uint32 sent);

#endif
