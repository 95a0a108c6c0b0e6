package transporttest

import (
	"testing"
	"time"

	"netstick/prototypes/reference/internal/sched"
	"netstick/prototypes/reference/internal/transport"
)

// testDriven: a driven transport (transport.Poller, as the client's dispatcher drives it) runs the
// callbacks of its dialled connections only inside Wait, and its own goroutine again
// after Drive(false); a Close while driven is reported Disconnected once, inside Wait.
func testDriven(t *testing.T, tr transport.Transport) {
	poller := tr.(transport.Poller)
	srv := &Recorder{}
	cli, ln, sc, cc := Pair(t, tr, srv)
	if err := sc.Send(transport.Unreliable, []byte("before")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "the undriven echo", 5*time.Second, func() bool { return cli.NumReceived() == 1 })

	poller.Drive(true)
	if err := sc.Send(transport.Unreliable, []byte("driven")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := cli.NumReceived(); n != 1 {
		t.Fatalf("driven: %d messages delivered outside Wait", n-1)
	}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("driven: %s not delivered by Wait", what)
			}
			now := sched.Now()
			poller.Wait(now+int64(time.Millisecond), now)
		}
	}
	waitFor("the message", func() bool { return cli.NumReceived() == 2 })
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor("the Disconnected", func() bool { return cli.NumDisconnected() == 1 })
	poller.Drive(false)

	cli2 := &Recorder{}
	cc2 := Dial(t, tr, ln.Addr(), cli2)
	defer cc2.Close()
	sc2 := <-srv.Conns()
	if err := sc2.Send(transport.Unreliable, []byte("undriven again")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "a message to a second player, undriven again", 5*time.Second, func() bool {
		return cli2.NumReceived() == 1
	})
}
