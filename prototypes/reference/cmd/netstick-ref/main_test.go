package main

import (
	"strings"
	"testing"

	"netstick/prototypes/reference/internal/config"
	"netstick/prototypes/reference/internal/transport"
)

// A stream or pingpong probe must fit its channel to the byte; one byte more is refused with the
// limit named, and other workloads are not judged by their (unused) size.
func TestProbeTooLargeAtTheLimitAndOneByteMore(t *testing.T) {
	caps := transport.Caps{MaxReliableBytes: 1000, MaxUnreliableBytes: 500}
	cases := []struct {
		w    config.Workload
		want string
	}{
		{config.Workload{Name: "stream", Size: 1000, Channel: transport.Reliable}, ""},
		{config.Workload{Name: "stream", Size: 1001, Channel: transport.Reliable},
			"-param size=1001: 1001 bytes on the reliable channel: transport x carries at most 1000 bytes there"},
		{config.Workload{Name: "pingpong", Size: 500, Channel: transport.Unreliable}, ""},
		{config.Workload{Name: "pingpong", Size: 501, Channel: transport.Unreliable}, "at most 500 bytes"},
		{config.Workload{Name: "idle", Size: 5000}, ""},
	}
	for _, c := range cases {
		got := probeTooLarge(c.w, "x", caps)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s size %d: got %q, want %q", c.w.Name, c.w.Size, got, c.want)
		}
	}
}
