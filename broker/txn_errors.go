package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/commitlog-go/commitlog"
)

// txnErrorCode is errorCode for the transaction APIs, with KIP-588's rule for a fenced
// producer: PRODUCER_FENCED from the version of each API that introduced it (fencedSince), and
// INVALID_PRODUCER_EPOCH, which older clients know, before it.
func txnErrorCode(err error, version, fencedSince int16) int16 {
	if errors.Is(err, commitlog.ErrProducerFenced) {
		if version >= fencedSince {
			return kerr.ProducerFenced.Code
		}
		return kerr.InvalidProducerEpoch.Code
	}
	return errorCode(err)
}
