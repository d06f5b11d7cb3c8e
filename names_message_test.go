package commitlog

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckTopicNameMessage: the error names the character that breaks the rule, a non-ASCII
// one whole (not its first byte), with its byte position, and the rule itself.
func TestCheckTopicNameMessage(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"café", `commitlog: invalid topic name: "café": character 'é' at byte 3 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		{"a b", `commitlog: invalid topic name: "a b": character ' ' at byte 1 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		{"日本", `commitlog: invalid topic name: "日本": character '日' at byte 0 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		{"a\xffb", `commitlog: invalid topic name: "a\xffb": character '�' at byte 1 is not one of [a-zA-Z0-9._-] (ASCII letters and digits, '.', '_' and '-', as Kafka's topic names)`},
		// Each internal topic is named for the coordinator that keeps it.
		{"__transaction_state", `commitlog: invalid topic name: "__transaction_state" is an internal topic of the store's transaction coordinator`},
		{"__consumer_offsets", `commitlog: invalid topic name: "__consumer_offsets" is an internal topic of the store's group coordinator (consumer groups' members and committed positions)`},
	} {
		err := CheckTopicName(tc.name)
		require.ErrorIs(t, err, ErrInvalidTopicName, tc.name)
		require.EqualError(t, err, tc.want, tc.name)
	}
}
