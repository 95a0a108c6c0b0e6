module netstick/prototypes/reference

go 1.26.8

require (
	github.com/coder/websocket v1.8.15
	github.com/pion/datachannel v1.6.3
	github.com/pion/ice/v4 v4.4.7
	github.com/pion/logging v0.2.4
	github.com/pion/sctp v1.12.0
	github.com/pion/webrtc/v4 v4.2.24
	github.com/quic-go/quic-go v0.65.0
	github.com/xtaci/kcp-go/v5 v5.6.72
	golang.org/x/sys v0.48.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/cpuid/v2 v2.2.6 // indirect
	github.com/klauspost/reedsolomon v1.12.0 // indirect
	github.com/pion/dtls/v3 v3.1.13 // indirect
	github.com/pion/interceptor v0.1.49 // indirect
	github.com/pion/mdns/v2 v2.2.2 // indirect
	github.com/pion/randutil v0.1.0 // indirect
	github.com/pion/rtcp v1.2.19 // indirect
	github.com/pion/rtp v1.10.5 // indirect
	github.com/pion/sdp/v3 v3.0.20 // indirect
	github.com/pion/srtp/v3 v3.1.3 // indirect
	github.com/pion/stun/v4 v4.0.1 // indirect
	github.com/pion/transport/v5 v5.1.1 // indirect
	github.com/pion/turn/v5 v5.1.2 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/tjfoc/gmsm v1.4.1 // indirect
	github.com/wlynxg/anet v0.0.5 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/time v0.14.0 // indirect
)
