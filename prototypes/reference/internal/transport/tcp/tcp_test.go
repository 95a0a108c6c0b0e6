package tcp

import (
	"testing"

	"netstick/prototypes/reference/internal/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, "tcp", nil)
}
