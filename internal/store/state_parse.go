package store

import (
	"encoding/json"
	"strings"
)

// parseState decodes a task's state, a flat JSON object of strings. The
// common case, with no escape in it (the scripts write tokens, numbers and
// worker IDs), is read by hand without reflection; anything else goes
// through encoding/json.
func parseState(raw string, s *state) error {
	if !plain(raw) || len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return stateJSON(raw, s)
	}
	body := raw[1 : len(raw)-1]
	for len(body) > 0 {
		k, rest, ok := quoted(body)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return stateJSON(raw, s)
		}
		v, rest, ok := quoted(rest[1:])
		if !ok {
			return stateJSON(raw, s) // a non-string value: let encoding/json judge
		}
		if !s.set(k, v) {
			return stateJSON(raw, s) // encoding/json matches keys case-insensitively
		}
		if len(rest) > 0 {
			if rest[0] != ',' {
				return stateJSON(raw, s)
			}
			rest = rest[1:]
		}
		body = rest
	}
	return nil
}

// plain reports whether raw is printable ASCII without a backslash, so
// that no string in it needs unescaping or UTF-8 repair.
func plain(raw string) bool {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
}

// quoted reads a "string" (no escapes) at the start of s.
func quoted(s string) (val, rest string, ok bool) {
	if len(s) < 2 || s[0] != '"' {
		return "", s, false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", s, false
	}
	return s[1 : 1+end], s[2+end:], true
}

// set assigns the field named exactly by its JSON key (stateFields in
// fields.go) and reports whether there is one.
func (s *state) set(k, v string) bool {
	switch k {
	case "st":
		s.St = v
	case "l":
		s.L = v
	case "att":
		s.Att = v
	case "pre":
		s.Pre = v
	case "rec":
		s.Rec = v
	case "cps":
		s.Cps = v
	case "rdy":
		s.Rdy = v
	case "agd":
		s.Agd = v
	case "pat":
		s.Pat = v
	case "err":
		s.Err = v
	case "fin":
		s.Fin = v
	case "w":
		s.W = v
	case "tk":
		s.Tk = v
	case "stt":
		s.Stt = v
	case "al":
		s.Al = v
	case "rs":
		s.Rs = v
	case "dl":
		s.Dl = v
	case "b":
		s.B = v
	case "sl":
		s.Sl = v
	case "cx":
		s.Cx = v
	default:
		return false
	}
	return true
}

// stateJSON decodes raw with encoding/json into a copy of s, then stores
// it in s: s never reaches encoding/json, so it does not escape, and
// decodeTask's state stays on its stack (one allocation a leased task);
// only this slow path allocates one.
func stateJSON(raw string, s *state) error {
	js := *s
	err := json.Unmarshal([]byte(raw), &js)
	*s = js
	return err
}
