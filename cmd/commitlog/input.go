package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Input formats of produce.
const (
	formatLines = "lines"
	formatJSONL = "jsonl"
	formatCSV   = "csv"
)

// input is one source of lines: a file or standard input.
type input struct {
	name    string
	r       io.Reader
	close   func() error
	regular bool  // a regular file: reads never wait for a writer
	size    int64 // bytes on disk, for progress; 0 when unknown
}

// openInputs opens the files named (standard input for none or "-"). Every file is opened
// before any line is read, so a missing one stops the command before it writes anything.
func openInputs(names []string, stdin io.Reader) ([]*input, error) {
	if len(names) == 0 {
		names = []string{"-"}
	}
	var ins []*input
	for _, name := range names {
		if name == "-" {
			in := &input{name: "standard input", r: stdin, close: func() error { return nil }}
			if f, ok := stdin.(*os.File); ok {
				if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
					in.regular, in.size = true, st.Size()
				}
			}
			ins = append(ins, in)
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			for _, in := range ins {
				in.close()
			}
			return nil, err
		}
		in := &input{name: name, r: f, close: f.Close}
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			in.regular, in.size = true, st.Size()
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// countingReader counts the bytes read through it, for the progress bar.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// lineReader returns an input's lines without their line endings ("\n" or "\r\n"), reading
// gzip transparently (by its magic bytes, so a .gz file and gzip on standard input both work).
type lineReader struct {
	name     string
	br       *bufio.Reader
	gz       *gzip.Reader
	line     int    // number of the line last returned, from 1
	long     []byte // a line longer than the buffer, assembled
	maxLine  int
	regular  bool // the source never blocks: no need to hand over a partial batch early
	bomTaken bool
}

const readBufferSize = 1 << 20

func newLineReader(in *input, counter *atomic.Int64, maxLine int) (*lineReader, error) {
	var r io.Reader = countingReader{in.r, counter}
	br := bufio.NewReaderSize(r, readBufferSize)
	lr := &lineReader{name: in.name, br: br, maxLine: maxLine, regular: in.regular}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.name, err)
		}
		lr.gz = gz
		lr.br = bufio.NewReaderSize(gz, readBufferSize)
	}
	return lr, nil
}

// next returns the next line, valid until the following call, or io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.long = lr.long[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		switch {
		case err == nil:
			lr.line++
			var line []byte
			if len(lr.long) > 0 {
				lr.long = append(lr.long, chunk...)
				line = lr.long
			} else {
				line = chunk
			}
			return lr.trim(line[:len(line)-1])
		case errors.Is(err, bufio.ErrBufferFull):
			lr.long = append(lr.long, chunk...)
			if len(lr.long) > lr.maxLine+2 {
				return nil, fmt.Errorf("%s:%d: line longer than max.message.bytes (%d bytes)", lr.name, lr.line+1, lr.maxLine)
			}
		case errors.Is(err, io.EOF):
			lr.long = append(lr.long, chunk...)
			if len(lr.long) == 0 {
				return nil, io.EOF
			}
			lr.line++
			return lr.trim(lr.long)
		default:
			return nil, fmt.Errorf("%s: %w", lr.name, err)
		}
	}
}

// trim drops a carriage return before the line feed, and a byte-order mark opening the input.
func (lr *lineReader) trim(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if !lr.bomTaken {
		lr.bomTaken = true
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	if len(line) > lr.maxLine {
		return nil, fmt.Errorf("%s:%d: line of %d bytes longer than max.message.bytes (%d)", lr.name, lr.line, len(line), lr.maxLine)
	}
	return line, nil
}

// wouldBlock reports whether reading the next line may wait for a writer: nothing is buffered
// and the source is a pipe or a terminal. A batch in hand is appended first then, so that a
// slow stream's records are acknowledged as they come.
func (lr *lineReader) wouldBlock() bool {
	return !lr.regular && lr.br.Buffered() == 0
}

func (lr *lineReader) close() {
	if lr.gz != nil {
		lr.gz.Close()
	}
}

// parseSpec says how lines become records.
type parseSpec struct {
	format     string
	keyDelim   string
	keyField   string
	timeField  string
	timeLayout string
}

// parsed is one line made a record: Key (nil: null key), timestamp (ms; when hasTime) and
// value. Key and value may alias the line.
type parsed struct {
	key     []byte
	ts      int64
	hasTime bool
	value   []byte
}

// lineParser turns lines into records; a new one is made for every input (a CSV input begins
// with its own header).
type lineParser interface {
	// parse fills p from line; skip is set for lines that are not records (the CSV header,
	// blank lines of JSON lines and CSV).
	parse(line []byte, p *parsed) (skip bool, err error)
}

func (spec *parseSpec) newParser() lineParser {
	switch spec.format {
	case formatJSONL:
		return &jsonParser{spec: spec, keyPath: fieldPath(spec.keyField), timePath: fieldPath(spec.timeField)}
	case formatCSV:
		return &csvParser{spec: spec}
	}
	return &linesParser{delim: []byte(spec.keyDelim)}
}

// linesParser: the key is the text before the first delimiter, the value the text after it
// (kcat's -K); without a delimiter, or on a line without one, the key is null and the value the
// whole line.
type linesParser struct{ delim []byte }

func (lp *linesParser) parse(line []byte, p *parsed) (bool, error) {
	*p = parsed{value: line}
	if len(lp.delim) > 0 {
		if k, v, ok := bytes.Cut(line, lp.delim); ok {
			p.key, p.value = k, v
		}
	}
	return false, nil
}

// fieldPath splits a dotted JSON field name ("properties.net") into its parts.
func fieldPath(name string) []string {
	if name == "" {
		return nil
	}
	return strings.Split(name, ".")
}

// jsonParser reads one JSON object a line; the record's value is the line as read.
type jsonParser struct {
	spec     *parseSpec
	keyPath  []string
	timePath []string
}

func (jp *jsonParser) parse(line []byte, p *parsed) (bool, error) {
	*p = parsed{value: line}
	if len(bytes.TrimSpace(line)) == 0 {
		return true, nil
	}
	if jp.keyPath == nil && jp.timePath == nil {
		if !json.Valid(line) {
			return false, errors.New("not valid JSON")
		}
		return false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return false, fmt.Errorf("not a JSON object: %v", err)
	}
	if jp.keyPath != nil {
		raw, ok, err := lookupJSON(obj, jp.keyPath)
		if err != nil {
			return false, fmt.Errorf("key field %q: %w", jp.spec.keyField, err)
		}
		if ok {
			p.key = jsonKey(raw)
		}
	}
	if jp.timePath != nil {
		raw, ok, err := lookupJSON(obj, jp.timePath)
		if err != nil {
			return false, fmt.Errorf("time field %q: %w", jp.spec.timeField, err)
		}
		if !ok || string(raw) == "null" {
			return false, fmt.Errorf("no time field %q", jp.spec.timeField)
		}
		ts, err := jsonTime(raw, jp.spec.timeLayout)
		if err != nil {
			return false, fmt.Errorf("time field %q: %w", jp.spec.timeField, err)
		}
		p.ts, p.hasTime = ts, true
	}
	return false, nil
}

// lookupJSON follows path from obj; ok is false when a part is missing.
func lookupJSON(obj map[string]json.RawMessage, path []string) (json.RawMessage, bool, error) {
	for i, part := range path {
		raw, ok := obj[part]
		if !ok {
			return nil, false, nil
		}
		if i == len(path)-1 {
			return raw, true, nil
		}
		obj = nil
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, false, fmt.Errorf("%q is not an object", part)
		}
	}
	return nil, false, nil
}

// jsonKey makes a JSON value a key: a string's text, null as a null key, anything else as its
// JSON text.
func jsonKey(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	}
	return raw
}

// jsonTime reads a JSON number as epoch milliseconds, a string as parseTime does.
func jsonTime(raw json.RawMessage, layout string) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		return parseTime(s, layout)
	}
	return parseEpochMs(string(raw))
}

// parseEpochMs reads milliseconds since the Unix epoch (a fraction is dropped).
func parseEpochMs(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f || f > 1<<62 || f < -(1<<62) {
		return 0, fmt.Errorf("%q is not epoch milliseconds", s)
	}
	return int64(f), nil
}

// parseTime reads a time as epoch milliseconds: with a layout (Go's reference-time notation;
// without a zone in it the time is UTC), by that layout; otherwise epoch milliseconds or RFC 3339.
func parseTime(s, layout string) (int64, error) {
	if layout != "" {
		t, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			return 0, fmt.Errorf("%q does not match the layout %q", s, layout)
		}
		return t.UnixMilli(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, fmt.Errorf("%q is neither epoch milliseconds nor RFC 3339 (give --time-layout for another layout)", s)
}

// csvParser reads CSV with a header line naming the columns; each later line is one record whose
// value is the line as read. A quoted field may not span lines.
type csvParser struct {
	spec      *parseSpec
	header    bool // the header was read
	keyCol    int  // -1: no key field
	timeCol   int  // -1: no time field
	fields    [][]byte
	maxNeeded int
}

func (cp *csvParser) parse(line []byte, p *parsed) (bool, error) {
	*p = parsed{value: line}
	if len(bytes.TrimSpace(line)) == 0 {
		return true, nil
	}
	var err error
	cp.fields, err = splitCSV(line, cp.fields[:0])
	if err != nil {
		return false, err
	}
	if !cp.header {
		cp.header = true
		cp.keyCol, cp.timeCol = -1, -1
		names := make([]string, len(cp.fields))
		for i, f := range cp.fields {
			names[i] = strings.TrimSpace(string(f))
		}
		find := func(what, name string) (int, error) {
			for i, n := range names {
				if n == name {
					cp.maxNeeded = max(cp.maxNeeded, i+1)
					return i, nil
				}
			}
			return -1, fmt.Errorf("no %s column %q in the header (%s)", what, name, strings.Join(names, ","))
		}
		if cp.spec.keyField != "" {
			if cp.keyCol, err = find("key", cp.spec.keyField); err != nil {
				return false, err
			}
		}
		if cp.spec.timeField != "" {
			if cp.timeCol, err = find("time", cp.spec.timeField); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	if len(cp.fields) < cp.maxNeeded {
		return false, fmt.Errorf("%d fields, the header has more", len(cp.fields))
	}
	if cp.keyCol >= 0 && len(cp.fields[cp.keyCol]) > 0 {
		p.key = cp.fields[cp.keyCol]
	}
	if cp.timeCol >= 0 {
		ts, err := parseTime(string(cp.fields[cp.timeCol]), cp.spec.timeLayout)
		if err != nil {
			return false, fmt.Errorf("time field %q: %w", cp.spec.timeField, err)
		}
		p.ts, p.hasTime = ts, true
	}
	return false, nil
}

// splitCSV splits one CSV line into its fields (RFC 4180 quoting), appending them to dst.
// Fields alias line unless they were quoted.
func splitCSV(line []byte, dst [][]byte) ([][]byte, error) {
	if bytes.IndexByte(line, '"') < 0 {
		for {
			i := bytes.IndexByte(line, ',')
			if i < 0 {
				return append(dst, line), nil
			}
			dst = append(dst, line[:i])
			line = line[i+1:]
		}
	}
	r := csv.NewReader(bytes.NewReader(line))
	r.FieldsPerRecord = -1
	rec, err := r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return dst, fmt.Errorf("not a CSV line: %v", err)
	}
	for _, f := range rec {
		dst = append(dst, []byte(f))
	}
	return dst, nil
}
