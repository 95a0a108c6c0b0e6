// stockecho: stock libenet as ENet's own examples use it, for the enet transport's
// tests. A server host and a client host in one process, each serviced by
// enet_host_service in a plain event loop; no callback, no field of ENet's written.
// After the connect the client sends a reliable message on channel 0, the server
// echoes every message from its receive event, and the client sends the next one from
// its receive event of the echo. At the echoes named on the command line it prints how
// many datagrams each host has sent so far (ENet's totalSentPackets):
//
//     stockecho 100 300   ->   echo 100 server 204 client 205
//                              echo 300 server 604 client 605
#include <enet/enet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	if (argc < 2 || enet_initialize() != 0) return 2;
	int last = atoi(argv[argc - 1]);
	ENetAddress addr;
	memset(&addr, 0, sizeof addr);
	enet_address_set_host(&addr, "127.0.0.1");
	ENetHost *server = enet_host_create(&addr, 4, 2, 0, 0);
	ENetHost *client = enet_host_create(NULL, 1, 2, 0, 0);
	if (server == NULL || client == NULL) return 2;
	ENetPeer *peer = enet_host_connect(client, &server->address, 2, 0);
	char msg[100];
	memset(msg, 'x', sizeof msg);
	int echoes = 0, next = 1;
	ENetEvent e;
	for (int rounds = 0; echoes < last && rounds < 10000000; rounds++) {
		while (enet_host_service(server, &e, 0) > 0) {
			if (e.type == ENET_EVENT_TYPE_RECEIVE) {
				enet_peer_send(e.peer, 0, enet_packet_create(e.packet->data, e.packet->dataLength, ENET_PACKET_FLAG_RELIABLE));
				enet_packet_destroy(e.packet);
			}
		}
		while (enet_host_service(client, &e, 0) > 0) {
			if (e.type == ENET_EVENT_TYPE_CONNECT) {
				enet_peer_send(peer, 0, enet_packet_create(msg, sizeof msg, ENET_PACKET_FLAG_RELIABLE));
			} else if (e.type == ENET_EVENT_TYPE_RECEIVE) {
				enet_packet_destroy(e.packet);
				echoes++;
				if (next < argc && echoes == atoi(argv[next])) {
					printf("echo %d server %u client %u\n", echoes, server->totalSentPackets, client->totalSentPackets);
					next++;
				}
				if (echoes < last)
					enet_peer_send(peer, 0, enet_packet_create(msg, sizeof msg, ENET_PACKET_FLAG_RELIABLE));
			}
		}
	}
	enet_host_destroy(client);
	enet_host_destroy(server);
	enet_deinitialize();
	return echoes == last ? 0 : 1;
}
