package broker

import "errors"

// SASLConfig configures SASL authentication.
type SASLConfig struct{}

func (c *SASLConfig) check() error { return errors.New("broker: SASL is not built yet") }

// saslSession is one connection's SASL exchange of one mechanism.
type saslSession interface {
	// step takes the client's next token and returns the server's answer; done says the
	// exchange succeeded, err that it failed (the connection is then closed after the answer).
	step(token []byte) (challenge []byte, done bool, err error)
	// user is the authenticated principal's name once done.
	user() string
}
