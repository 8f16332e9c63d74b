package food11

import "slices"

// again is the user's load as command words after "mltrain", for next
// steps: the same source, pin, volume and choices, so a hint copied from
// an error acts on the zip and the volume the user meant, never on the
// course's mirror and the shared food11 volume instead. The volume is named
// even when it is the default one: `up --data food11` loads into the lab's
// own. extra flags are added when the words lack them.
func (o Options) again(extra ...string) []string {
	w := []string{"data", "food11"}
	switch {
	case o.Zip != "":
		w = append(w, "--zip", o.Zip)
	case o.URL != "" && o.URL != DefaultURL:
		w = append(w, "--url", o.URL)
	}
	if o.SHA256 != "" {
		w = append(w, "--sha256", o.SHA256)
	}
	vol := o.Volume
	if vol == "" {
		vol = DefaultVolume
	}
	w = append(w, "--volume", vol)
	for _, f := range []struct {
		on   bool
		flag string
	}{{o.Force, "--force"}, {o.Strict, "--strict"}, {o.AllowMissingClasses, "--allow-missing-classes"}, {o.Lock.NoWait, "--no-wait"}} {
		if f.on {
			w = append(w, f.flag)
		}
	}
	return withFlags(w, extra...)
}

// againOf is words when Run set them, else "data food11" with fallback:
// what Load and Fetch, called on their own, name in their next steps.
func againOf(words []string, fallback ...string) []string {
	if len(words) > 0 {
		return words
	}
	return append([]string{"data", "food11"}, fallback...)
}

// withFlags is words with each of flags (valueless) added when absent.
func withFlags(words []string, flags ...string) []string {
	out := slices.Clone(words)
	for _, f := range flags {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// withoutFlag is words without flag and, when it takes one, its value.
func withoutFlag(words []string, flag string, valued bool) []string {
	out := make([]string, 0, len(words))
	for i := 0; i < len(words); i++ {
		if words[i] == flag {
			if valued {
				i++
			}
			continue
		}
		out = append(out, words[i])
	}
	return out
}

// withCourseZip is words loading the course's zip (the default URL): no
// --url, --zip or the pin of either.
func withCourseZip(words []string) []string {
	return withoutFlag(withoutFlag(withoutFlag(words, "--url", true), "--zip", true), "--sha256", true)
}

// withSource is words loading from another source: flag (--url or --zip)
// with value, in place of the one the words name, and without its pin.
func withSource(words []string, flag, value string) []string {
	w := withCourseZip(words)
	return append(w[:2:2], append([]string{flag, value}, w[2:]...)...)
}
