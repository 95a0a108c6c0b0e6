package all

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"netstick/prototypes/reference/internal/transport"
)

// Every transport says what it sets differently from its library's default: the process
// records it as transport_settings in its meta.json (CONTRACT.md 3.1), and an option that
// changes a setting shows in it.
func TestEveryTransportReportsItsSettings(t *testing.T) {
	changes := map[string][3]string{ // transport: option, value, setting it changes
		"udp": {"sockbuf", "65536", "sockbuf"}, "kcp": {"mtu", "1000", "mtu"},
		"enet": {"timeout_ms", "5000", "timeout_ms"}, "quic": {"idle_timeout_ms", "9000", "keep_alive_period_ms"},
		"ws": {"write_timeout_ms", "100", "write_timeout_ms"}, "webrtc": {"keepalive", "1s", "keepalive"},
	}
	for _, name := range transport.Names() {
		tr, err := transport.New(name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, ok := tr.(transport.Settings)
		if !ok || len(s.Settings()) == 0 {
			t.Errorf("%s records no transport_settings", name)
			continue
		}
		c, ok := changes[name]
		if !ok {
			continue
		}
		changed, err := transport.New(name, transport.Options{c[0]: c[1]})
		if err != nil {
			t.Fatalf("%s %s=%s: %v", name, c[0], c[1], err)
		}
		if before, after := s.Settings()[c[2]], changed.(transport.Settings).Settings()[c[2]]; before == after {
			t.Errorf("%s: option %s=%s leaves setting %s at %q", name, c[0], c[1], c[2], after)
		}
	}
}

// No binding reaches into its library beyond the public API: no unsafe pointers, reflection
// or linkname into a library's unexported names. enet's cgo binding is the exception that
// needs unsafe for C memory; its C side is checked in the enet package
// (TestStockWritesNoENetStructure).
func TestBindingsUseThePublicAPIOnly(t *testing.T) {
	forbidden := regexp.MustCompile(`"unsafe"|"reflect"|//go:linkname`)
	files, err := filepath.Glob("../*/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transport sources found: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/enet/") || strings.Contains(f, "/transporttest/") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := forbidden.Find(src); m != nil {
			t.Errorf("%s uses %s: a binding uses its library's public API only", f, m)
		}
	}
}
