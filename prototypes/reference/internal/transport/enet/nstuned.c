//go:build linux && cgo

// The ENet tunings of the enet transport's variants (prototype.yaml: enet+merged-acks,
// enet+fast-connect, enet+tuned). Each changes libenet's own protocol behaviour beyond
// any option an ENet user sets, so none is on in the stock binding: they are the only
// code of the binding that writes ENet's structures or installs a callback into it
// (nsenet.c, the stock binding, only calls libenet's functions and reads its public
// structures). Every function here must be called with the host's lock held.

#include "nsenet.h"

#include <enet/time.h>
#include <errno.h>
#include <sys/socket.h>

// ns_tuning, ns_cut, ns_pass_start and ns_in_pass live during one enet_host_service
// call, made by ns_events on the calling thread (thread-local). ns_tuning is the
// host's NS_TUNE_* bits; ns_cut holds ENet's socket while ns_intercept has cut a pass
// short (-1 otherwise); ns_pass_start is host->totalReceivedPackets when the pass
// began; ns_in_pass is set only during the pass.
static __thread int ns_tuning;
static __thread int ns_cut = -1;
static __thread enet_uint32 ns_pass_start;
static __thread int ns_in_pass;

// ns_seed_rtt (fast-connect) runs at the connect event of a dialled peer, in the
// service pass that received the server's verify-connect. Until its first
// acknowledgement ENet keeps its default round-trip estimate of 500 ms, so the first
// reliable messages (a player's hello) are retransmitted only after 0.5, 1.5, 3.5 s,
// and the server drops them until the acknowledgement of its verify-connect reaches it
// (which stock ENet retransmits on the same schedule; see ns_hurry_verify): a lost
// datagram then cost 0.5-2 s per round. The handshake's own round trip is a
// measurement ENet ignores: from the peer's last send before this pass (sent: its
// lastSendTime when the pass began, a connect command, the only thing a connecting peer
// sends; stock ENet acknowledges the verify-connect within the pass, so lastSendTime
// itself is now) to this pass. It is the true round trip when the verify-connect
// answered that send, and shorter when it answered an earlier one, so the estimate is
// never too long. It is applied as ENet applies its first sample
// (handle_acknowledge: variance half the round trip); lastReceiveTime stays 0, so
// ENet's first real sample replaces it the same way. Never above ENet's default.
void ns_seed_rtt(ENetHost *h, ENetPeer *p, enet_uint32 sent) {
	enet_uint32 rtt = ENET_TIME_DIFFERENCE(h->serviceTime, sent);
	if (rtt < 1) rtt = 1;
	if (rtt >= p->roundTripTime) return;
	p->roundTripTime = rtt;
	p->roundTripTimeVariance = (rtt + 1) / 2;
}

// ns_hurry_verify (fast-connect): a datagram from a peer the server still holds in
// ACKNOWLEDGING_CONNECT proves that the peer got the verify-connect (it learns its
// peer id from it) and, unless the datagram carries it, that the acknowledgement was
// lost. ENet drops the peer's data until that acknowledgement arrives and resends the
// verify-connect only on its default timer, 0.5, 1.5, 3.5, 7.5 s after the first send,
// so a few lost acknowledgements kept a player from saying hello for its whole connect
// budget. The verify-connect is made due at once instead (like TCP's fast retransmit);
// if the datagram does carry the acknowledgement, ENet removes the command before it
// is resent. ENet's timer then doubles from the time since the last send.
static void ns_hurry_verify(ENetHost *h) {
	if (h->receivedDataLength < sizeof(enet_uint16)) return;
	enet_uint16 id = ENET_NET_TO_HOST_16(((ENetProtocolHeader *)h->receivedData)->peerID);
	id &= ~(ENET_PROTOCOL_HEADER_FLAG_MASK | ENET_PROTOCOL_HEADER_SESSION_MASK);
	if (id >= h->peerCount) return;
	ENetPeer *p = &h->peers[id];
	if (p->state != ENET_PEER_STATE_ACKNOWLEDGING_CONNECT ||
	    p->address.host != h->receivedAddress.host || p->address.port != h->receivedAddress.port ||
	    enet_list_empty(&p->sentReliableCommands))
		return;
	ENetOutgoingCommand *v = (ENetOutgoingCommand *)enet_list_front(&p->sentReliableCommands);
	if ((v->command.header.command & ENET_PROTOCOL_COMMAND_MASK) != ENET_PROTOCOL_COMMAND_VERIFY_CONNECT)
		return;
	enet_uint32 since = ENET_TIME_DIFFERENCE(h->serviceTime, v->sentTime);
	if (since >= 1 && since < v->roundTripTimeout) {
		v->roundTripTimeout = since;
		p->nextTimeout = v->sentTime + since;
	}
}

// ns_intercept runs for every datagram enet_host_service reads, before ENet handles
// it. With merged-acks: a pass reads until the socket is empty, then sends the
// acknowledgements the datagrams asked for (one datagram per peer), then dispatches
// their events, so the handlers' answers (an echo) would follow in a second datagram to
// the same peer. If no further datagram is waiting after this one, ns_intercept swaps
// host->socket for an invalid descriptor: ENet handles this datagram, its next read
// fails, and enet_host_service returns before that send. ns_tuned_pass_end restores
// the socket, the events are dispatched and handled, and one flush sends each peer its
// acknowledgements and answers together. Nothing in the receive path touches the
// socket besides that read (ENet only queues commands there). Not on a pass's 256th
// datagram: ENet's receive loop stops there without another read and would send.
static int ns_intercept(ENetHost *h, ENetEvent *event) {
	char c;
	(void)event;
	if (ns_tuning & NS_TUNE_HURRY_VERIFY) ns_hurry_verify(h);
	if (!(ns_tuning & NS_TUNE_MERGED_ACKS) || !ns_in_pass || ns_cut != -1 ||
	    h->socket == ENET_SOCKET_NULL || h->totalReceivedPackets - ns_pass_start >= 256)
		return 0;
	if (recv(h->socket, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK)) {
		ns_cut = h->socket;
		h->socket = ENET_SOCKET_NULL;
	}
	return 0;
}

void ns_tuned_install(ENetHost *h) { h->intercept = ns_intercept; }

void ns_tuned_pass_begin(ENetHost *h, int tuning) {
	ns_tuning = tuning;
	ns_pass_start = h->totalReceivedPackets;
	ns_in_pass = 1;
}

int ns_tuned_pass_end(ENetHost *h) {
	ns_in_pass = 0;
	if (ns_cut == -1) return 0;
	h->socket = ns_cut;
	ns_cut = -1;
	return 1;
}
