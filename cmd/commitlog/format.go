package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog"
)

// A record format is kcat's: literal text with tokens that stand for the record's fields.
//
//	%t topic    %p partition    %o offset    %T timestamp (ms)
//	%k key      %s value        %K key size (-1 for a null key)    %S value size
//	%h headers (name=value, comma-separated)    %% a percent sign
//	\n newline  \t tab  \r carriage return  \\ backslash
type recordFormat []formatPart

type formatPart struct {
	lit string // literal text, when tok is 0
	tok byte
}

const defaultFormat = `%s\n`

func parseFormat(s string) (recordFormat, error) {
	var parts recordFormat
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, formatPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%':
			if i+1 == len(s) {
				return nil, fmt.Errorf("format %q ends in a lone %%", s)
			}
			i++
			switch t := s[i]; t {
			case '%':
				lit.WriteByte('%')
			case 't', 'p', 'o', 'k', 's', 'T', 'h', 'K', 'S':
				flush()
				parts = append(parts, formatPart{tok: t})
			default:
				return nil, fmt.Errorf("format %q: unknown token %%%c (known: %%t %%p %%o %%k %%s %%T %%h %%K %%S %%%%)", s, t)
			}
		case '\\':
			if i+1 == len(s) {
				lit.WriteByte('\\')
				continue
			}
			i++
			switch e := s[i]; e {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(e)
			}
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

// append writes r formatted to dst.
func (f recordFormat) append(dst []byte, r *commitlog.Record) []byte {
	for _, p := range f {
		switch p.tok {
		case 0:
			dst = append(dst, p.lit...)
		case 't':
			dst = append(dst, r.Topic...)
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 'k':
			dst = append(dst, r.Key...)
		case 's':
			dst = append(dst, r.Value...)
		case 'T':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'K':
			n := int64(len(r.Key))
			if r.Key == nil {
				n = -1
			}
			dst = strconv.AppendInt(dst, n, 10)
		case 'S':
			n := int64(len(r.Value))
			if r.Value == nil {
				n = -1
			}
			dst = strconv.AppendInt(dst, n, 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		}
	}
	return dst
}

// count writes n with the noun in its number: "1 record", "2 records", "0 records"; plural is
// the noun's plural form, or "" for noun+"s".
func count[N ~int | ~int32 | ~int64](n N, noun, plural string) string {
	if n == 1 {
		return "1 " + noun
	}
	if plural == "" {
		plural = noun + "s"
	}
	return strconv.FormatInt(int64(n), 10) + " " + plural
}

// jsonEnvelope returns a record writer of kcat's -J output: one JSON object a line with the
// fields topic, partition, offset, tstype ("create" or "logappend", the topic's
// message.timestamp.type), ts (ms), broker (-1: the store has no broker id), headers (an array
// of name, value, name, value, ..., only when the record has headers, as kcat), key and
// payload (strings, or null for a null key or value).
func jsonEnvelope(tt commitlog.TimestampType) func(dst []byte, r *commitlog.Record) []byte {
	tstype := "create"
	if tt == commitlog.LogAppendTime {
		tstype = "logappend"
	}
	return func(dst []byte, r *commitlog.Record) []byte {
		dst = append(dst, `{"topic":`...)
		dst = appendJSONString(dst, r.Topic)
		dst = append(dst, `,"partition":`...)
		dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, r.Offset, 10)
		dst = append(dst, `,"tstype":"`...)
		dst = append(dst, tstype...)
		dst = append(dst, `","ts":`...)
		dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		dst = append(dst, `,"broker":-1`...)
		if len(r.Headers) > 0 {
			dst = append(dst, `,"headers":[`...)
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSONString(dst, h.Key)
				dst = append(dst, ',')
				dst = appendJSONBytes(dst, h.Value)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, `,"key":`...)
		dst = appendJSONBytes(dst, r.Key)
		dst = append(dst, `,"payload":`...)
		dst = appendJSONBytes(dst, r.Value)
		return append(dst, "}\n"...)
	}
}

// appendJSONBytes writes b as a JSON string, or null for nil.
func appendJSONBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, string(b))
}

// appendJSONString writes s as a JSON string (bytes that are not UTF-8 become U+FFFD, as
// encoding/json writes them).
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}
