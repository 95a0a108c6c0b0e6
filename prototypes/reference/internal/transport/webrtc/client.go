package webrtc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"

	pion "github.com/pion/webrtc/v4"

	"netstick/prototypes/reference/internal/transport"
)

// signalClient posts offers. No proxy (an HTTP_PROXY in the environment must not
// capture benchmark traffic) and no keep-alive: one short request per dial, and no
// idle connections left behind after the benchmark's dial phase.
var signalClient = &http.Client{Transport: &http.Transport{
	Proxy:             nil,
	DisableKeepAlives: true,
	DialContext:       (&net.Dialer{}).DialContext,
}}

// Dial implements transport.Transport. It returns once both data channels are open.
func (t *Transport) Dial(ctx context.Context, addr string, h transport.Handler) (transport.Conn, error) {
	c, err := t.dial(ctx, addr, h)
	if err != nil {
		return nil, fmt.Errorf("webrtc dial %s: %w: %w", addr, transport.ErrConnect, err)
	}
	return c, nil
}

func (t *Transport) dial(ctx context.Context, addr string, h transport.Handler) (*conn, error) {
	cert, err := t.certificate()
	if err != nil {
		return nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	local, err := localIPFor(raddr)
	if err != nil {
		return nil, err
	}
	ifaceF, ipF, err := t.filters(local)
	if err != nil {
		return nil, err
	}
	pc, err := t.newAPI(ifaceF, ipF, nil).NewPeerConnection(pion.Configuration{Certificates: []pion.Certificate{cert}})
	if err != nil {
		return nil, fmt.Errorf("new peer connection: %w", err)
	}
	c := newConn(t, pc, h, raddr.String())
	fail := func(err error) (*conn, error) {
		// Never reported Connected, so no Disconnected; just release pion's resources.
		c.shutdown(err)
		<-c.pcClosed
		return nil, err
	}
	rel, unrel, err := newDataChannels(pc)
	if err != nil {
		return fail(err)
	}
	c.watch(rel, unrel)
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return fail(fmt.Errorf("create offer: %w", err))
	}
	gathered := pion.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return fail(fmt.Errorf("set offer: %w", err))
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fail(fmt.Errorf("gather candidates: %w", ctx.Err()))
	}
	answer, err := postOffer(ctx, "http://"+addr+"/offer", pc.LocalDescription().SDP)
	if err != nil {
		return fail(err)
	}
	if err := pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: answer}); err != nil {
		return fail(fmt.Errorf("set answer: %w", err))
	}
	select {
	case <-c.bothOpen:
	case <-c.failed:
		return fail(c.failReason())
	case <-ctx.Done():
		return fail(fmt.Errorf("open data channels: %w", ctx.Err()))
	}
	if !c.start() {
		return fail(c.failReason())
	}
	return c, nil
}

// failReason is the teardown reason of a connection that never became ready.
func (c *conn) failReason() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason == nil {
		return fmt.Errorf("connection closed while opening")
	}
	return c.reason
}

// postOffer sends the offer SDP and returns the answer SDP.
func postOffer(ctx context.Context, url, offer string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(offer))
	if err != nil {
		return "", fmt.Errorf("signalling: %w", err)
	}
	req.Header.Set("Content-Type", "application/sdp")
	resp, err := signalClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("signalling: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOfferBytes))
	if err != nil {
		return "", fmt.Errorf("signalling: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("signalling: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return string(body), nil
}

// localIPFor is the local address the kernel would use to reach raddr (a UDP
// "connect" sends nothing), so candidates come only from the interface that is on
// the path to the server: lo for 127.0.0.1, the veth inside a namespace.
func localIPFor(raddr *net.UDPAddr) (net.IP, error) {
	uc, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		return nil, fmt.Errorf("route to %s: %w", raddr, err)
	}
	defer uc.Close()
	return uc.LocalAddr().(*net.UDPAddr).IP, nil
}
