package tcp

import (
	"testing"

	"netstick/prototypes/reference/internal/transport"
	"netstick/prototypes/reference/internal/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport { return Transport{} })
}
