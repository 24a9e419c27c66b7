// A TLC module override for resume-check's generated module TraceData (see batch.py).
//
// Why: a batch of traces used to reach TLC only as a generated TLA+ module, which SANY
// parsed and TLC then evaluated into values: for 1,000 traces of ~100 events that was more
// than half of the CPU of a whole run and most of its memory (the parse tree of a 5 MB
// module). TLC 2.15 asks the class tlc2.overrides.TLCOverrides for classes whose methods,
// annotated @TLAPlusOperator, replace TLA+ operators of the same name and arity; a
// zero-arity method that is also `final` is called once, when TLC loads it, and its value
// used from then on (tlc2.value.impl.MethodValue.get). So `TraceLog` here reads the same
// text that the generated module would hold -- the event constructors and
// `TraceLog == <<...>>`, written by resume-check from numbers and the schema's own words
// only -- straight into TLC values, and SANY never sees it.
//
// The file is named by the system property `resumecheck.tracedata`. The reader accepts
// exactly the subset of TLA+ that resume-check's encoder writes (integers, strings with \"
// and \\ escapes, TRUE, FALSE, tuples, sets, records, calls of the constructors defined
// before) and fails on anything else, naming the offset: a wrong value must never be
// judged. TLC reports such a failure as an error of the override, not as a verdict.
//
// Compiled by resumecheck.tlc.override with the JDK's javac against the tla2tools.jar in
// use; `main` is the self-test that runs once after compiling, before the class is used.
package resumecheck;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import tlc2.value.impl.BoolValue;
import tlc2.value.impl.IntValue;
import tlc2.value.impl.RecordValue;
import tlc2.value.impl.SetEnumValue;
import tlc2.value.impl.StringValue;
import tlc2.value.impl.TupleValue;
import tlc2.value.impl.Value;
import tlc2.overrides.TLAPlusOperator;
import util.UniqueString;

public final class TraceDataOverride {
    /** The system property that names the data file. */
    public static final String PROPERTY = "resumecheck.tracedata";
    /** The first line of a data file: the version of this format. */
    public static final String MAGIC = "\\* resume-check trace data 1\n";

    private TraceDataOverride() {
    }

    // TraceValidation!TraceProgress, TLA+'s way, prints <<"rc-progress", t, n>> every time a
    // behaviour of trace t matches one event more than any before it: one line per event of
    // the batch, which TLC formats and resume-check reads back (about a tenth of a call's
    // CPU at 1,000 traces, bench/results.md). Here the longest prefix of each trace is kept
    // instead and printed once, when TLC exits (a shutdown hook: TLC ends with System.exit,
    // also after an evaluation error); a line is printed at once only when a trace goes
    // deeper than every trace before it, so that the progress display still moves. The
    // maximum of the numbers printed per trace is the same either way.
    private static final Map<Integer, Integer> BEST = new ConcurrentHashMap<>();
    private static final AtomicInteger DEEPEST = new AtomicInteger();

    /**
     * Set by the warm driver (WarmTLC), which runs many TLC runs in one JVM and calls
     * {@link #printProgress} itself when each run is over: a hook would print only when the
     * driver exits, and would keep every run's classes (and what TLC left in them) alive.
     */
    public static final String WARM_PROPERTY = "resumecheck.warm";

    static {
        if (!Boolean.getBoolean(WARM_PROPERTY)) {
            Runtime.getRuntime().addShutdownHook(new Thread(TraceDataOverride::printProgress));
        }
    }

    /** Notes that a behaviour of trace `t` matched its first `n` events. */
    @TLAPlusOperator(identifier = "TraceProgress", module = "TraceValidation")
    public static Value TraceProgress(final Value t, final Value n) {
        final int trace = ((IntValue) t).val;
        final int depth = ((IntValue) n).val;
        if (depth > 0 && BEST.merge(trace, depth, Math::max) == depth) {
            int deepest = DEEPEST.get();
            while (depth > deepest) {
                if (DEEPEST.compareAndSet(deepest, depth)) {
                    System.out.println(progressLine(trace, depth));
                    break;
                }
                deepest = DEEPEST.get();
            }
        }
        return BoolValue.ValTrue;
    }

    private static String progressLine(final int trace, final int depth) {
        return "<<\"rc-progress\", " + trace + ", " + depth + ">>";
    }

    /** Prints the longest prefix of each trace (at exit, or when a warm run is over). */
    public static void printProgress() {
        final StringBuilder out = new StringBuilder();
        BEST.entrySet().stream().sorted(Map.Entry.comparingByKey())
                .forEach(e -> out.append(progressLine(e.getKey(), e.getValue())).append('\n'));
        System.out.print(out);
        System.out.flush();
    }

    /** The batch: `final`, so that TLC evaluates it once, when it loads the override. */
    @TLAPlusOperator(identifier = "TraceLog", module = "TraceData")
    public static final Value TraceLog() {
        final String file = System.getProperty(PROPERTY);
        if (file == null) {
            throw new IllegalStateException("resume-check: system property " + PROPERTY
                    + " names no trace data file");
        }
        try {
            return read(file);
        } catch (IOException e) {
            throw new IllegalStateException("resume-check: cannot read " + file + ": " + e);
        }
    }

    /** The value of `TraceLog` defined in `file`, normalized as TLC's own values are. */
    static Value read(final String file) throws IOException {
        final byte[] text = Files.readAllBytes(Paths.get(file));
        final Value value = new Reader(text).file();
        value.deepNormalize();
        return value;
    }

    /** Self-test: prints the number of traces in each file named, and the first of them. */
    public static void main(final String[] args) throws IOException {
        for (final String file : args) {
            final Value log = read(file);
            final TupleValue traces = (TupleValue) log;
            System.out.println(traces.size());
            if (traces.size() > 0) {
                System.out.println(traces.elems[0]);
            }
        }
    }

    /** A part of a constructor's body: a constant, a parameter, or a structure of parts. */
    private abstract static class Template {
        abstract Value make(Value[] args);
    }

    private static final class Constant extends Template {
        private final Value value;

        Constant(final Value value) {
            this.value = value;
        }

        @Override
        Value make(final Value[] args) {
            return value;
        }
    }

    private static final class Parameter extends Template {
        private final int index;

        Parameter(final int index) {
            this.index = index;
        }

        @Override
        Value make(final Value[] args) {
            return args[index];
        }
    }

    private static final class Structure extends Template {
        private final char kind; // '<' tuple, '{' set, '[' record
        private final UniqueString[] names;
        private final Template[] parts;

        Structure(final char kind, final UniqueString[] names, final Template[] parts) {
            this.kind = kind;
            this.names = names;
            this.parts = parts;
        }

        @Override
        Value make(final Value[] args) {
            final Value[] values = new Value[parts.length];
            for (int i = 0; i < parts.length; i++) {
                values[i] = parts[i].make(args);
            }
            // A copy of the names: TLC normalizes a record by sorting its arrays in place.
            return build(kind, names.clone(), values);
        }
    }

    private static final class Constructor {
        final int arity;
        final Template body;

        Constructor(final int arity, final Template body) {
            this.arity = arity;
            this.body = body;
        }
    }

    static Value build(final char kind, final UniqueString[] names, final Value[] values) {
        switch (kind) {
            case '<':
                return new TupleValue(values);
            case '{':
                return new SetEnumValue(values, false);
            default:
                return new RecordValue(names, values, false);
        }
    }

    /** A recursive-descent reader of the subset of TLA+ described above. */
    private static final class Reader {
        private final byte[] s;
        private int i;
        private final Map<String, Constructor> constructors = new HashMap<>();
        private final Map<String, Value> strings = new HashMap<>();
        /** The parameters of the definition being read; null outside a constructor. */
        private Map<String, Integer> params;

        Reader(final byte[] text) {
            this.s = text;
        }

        Value file() {
            final byte[] magic = MAGIC.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            if (s.length < magic.length) {
                throw fail("not a resume-check trace data file");
            }
            for (int k = 0; k < magic.length; k++) {
                if (s[k] != magic[k]) {
                    throw fail("not a resume-check trace data file (version 1)");
                }
            }
            i = magic.length;
            Value log = null;
            while (true) {
                space();
                if (i == s.length) {
                    break;
                }
                final String name = identifier();
                space();
                if (name.equals("TraceLog")) {
                    expect("==");
                    if (log != null) {
                        throw fail("TraceLog defined twice");
                    }
                    log = value();
                    continue;
                }
                final List<String> formal = new ArrayList<>();
                if (peek('(')) {
                    i++;
                    do {
                        space();
                        formal.add(identifier());
                        space();
                    } while (take(','));
                    expect(")");
                    space();
                }
                expect("==");
                params = new HashMap<>();
                for (int k = 0; k < formal.size(); k++) {
                    params.put(formal.get(k), k);
                }
                final Template body = template();
                params = null;
                if (constructors.put(name, new Constructor(formal.size(), body)) != null) {
                    throw fail("constructor " + name + " defined twice");
                }
            }
            if (log == null) {
                throw fail("no TraceLog definition");
            }
            return log;
        }

        /** A value inside a constructor's body, where parameter names may appear. */
        private Template template() {
            space();
            final byte c = cur();
            if (c == '<' || c == '{' || c == '[') {
                final char kind = (char) c;
                final List<UniqueString> names = new ArrayList<>();
                final List<Template> parts = new ArrayList<>();
                expect(kind == '<' ? "<<" : String.valueOf(kind));
                final String close = kind == '<' ? ">>" : kind == '{' ? "}" : "]";
                space();
                if (!startsWith(close)) {
                    do {
                        space();
                        if (kind == '[') {
                            names.add(UniqueString.uniqueStringOf(identifier()));
                            space();
                            expect("|->");
                        }
                        parts.add(template());
                        space();
                    } while (take(','));
                }
                if (kind == '[' && parts.isEmpty()) {
                    throw fail("empty record");
                }
                expect(close);
                boolean constant = true;
                for (final Template part : parts) {
                    constant &= part instanceof Constant;
                }
                final Structure structure = new Structure(kind,
                        names.toArray(new UniqueString[0]), parts.toArray(new Template[0]));
                return constant ? new Constant(structure.make(null)) : structure;
            }
            if (isLetter(c)) {
                final int start = i;
                final String name = identifier();
                final Integer index = params.get(name);
                if (index != null) {
                    return new Parameter(index);
                }
                i = start;
            }
            return new Constant(value());
        }

        /** A value outside constructors: the body of TraceLog. */
        private Value value() {
            space();
            final byte c = cur();
            switch (c) {
                case '"':
                    return string();
                case '<':
                    expect("<<");
                    return new TupleValue(sequence(">>"));
                case '{':
                    i++;
                    return new SetEnumValue(sequence("}"), false);
                case '[':
                    return record();
                case '-':
                    i++;
                    return IntValue.gen(-natural());
                default:
                    break;
            }
            if (c >= '0' && c <= '9') {
                return IntValue.gen(natural());
            }
            if (!isLetter(c)) {
                throw fail("unexpected character");
            }
            final String name = identifier();
            if (name.equals("TRUE")) {
                return BoolValue.ValTrue;
            }
            if (name.equals("FALSE")) {
                return BoolValue.ValFalse;
            }
            final Constructor constructor = constructors.get(name);
            if (constructor == null) {
                throw fail("unknown name " + name);
            }
            Value[] args = new Value[0];
            if (peek('(')) {
                i++;
                args = sequence(")");
            }
            if (args.length != constructor.arity) {
                throw fail(name + " takes " + constructor.arity + " argument(s)");
            }
            return constructor.body.make(args);
        }

        private Value[] sequence(final String close) {
            final List<Value> items = new ArrayList<>();
            space();
            if (!startsWith(close)) {
                do {
                    items.add(value());
                    space();
                } while (take(','));
            }
            expect(close);
            return items.toArray(new Value[0]);
        }

        private Value record() {
            expect("[");
            final List<UniqueString> names = new ArrayList<>();
            final List<Value> values = new ArrayList<>();
            do {
                space();
                names.add(UniqueString.uniqueStringOf(identifier()));
                space();
                expect("|->");
                values.add(value());
                space();
            } while (take(','));
            expect("]");
            return new RecordValue(names.toArray(new UniqueString[0]),
                    values.toArray(new Value[0]), false);
        }

        private Value string() {
            final StringBuilder out = new StringBuilder();
            i++;
            while (true) {
                if (i >= s.length) {
                    throw fail("unterminated string");
                }
                final byte c = s[i++];
                if (c == '"') {
                    break;
                }
                if (c < 0x20 || c > 0x7e) {
                    throw fail("a string holds a character that is not printable ASCII");
                }
                if (c == '\\') {
                    if (i >= s.length || (s[i] != '"' && s[i] != '\\')) {
                        throw fail("unknown escape in a string");
                    }
                    out.append((char) s[i++]);
                } else {
                    out.append((char) c);
                }
            }
            final String text = out.toString();
            Value value = strings.get(text);
            if (value == null) {
                value = new StringValue(text);
                strings.put(text, value);
            }
            return value;
        }

        private int natural() {
            final int start = i;
            long n = 0;
            while (i < s.length && s[i] >= '0' && s[i] <= '9') {
                n = n * 10 + (s[i++] - '0');
                if (n > Integer.MAX_VALUE) {
                    throw fail("integer out of range");
                }
            }
            if (i == start) {
                throw fail("expected a number");
            }
            return (int) n;
        }

        private String identifier() {
            final int start = i;
            if (i >= s.length || !isLetter(s[i])) {
                throw fail("expected a name");
            }
            while (i < s.length && (isLetter(s[i]) || (s[i] >= '0' && s[i] <= '9'))) {
                i++;
            }
            return new String(s, start, i - start, java.nio.charset.StandardCharsets.US_ASCII);
        }

        private static boolean isLetter(final byte c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        }

        /** Skips blanks and `\*` comments to the end of their line. */
        private void space() {
            while (i < s.length) {
                final byte c = s[i];
                if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                    i++;
                } else if (c == '\\' && i + 1 < s.length && s[i + 1] == '*') {
                    while (i < s.length && s[i] != '\n') {
                        i++;
                    }
                } else {
                    return;
                }
            }
        }

        private byte cur() {
            if (i >= s.length) {
                throw fail("unexpected end of file");
            }
            return s[i];
        }

        private boolean peek(final char c) {
            return i < s.length && s[i] == c;
        }

        private boolean take(final char c) {
            if (peek(c)) {
                i++;
                return true;
            }
            return false;
        }

        private boolean startsWith(final String word) {
            if (i + word.length() > s.length) {
                return false;
            }
            for (int k = 0; k < word.length(); k++) {
                if (s[i + k] != word.charAt(k)) {
                    return false;
                }
            }
            return true;
        }

        private void expect(final String word) {
            if (!startsWith(word)) {
                throw fail("expected " + word);
            }
            i += word.length();
        }

        private IllegalStateException fail(final String why) {
            return new IllegalStateException("resume-check trace data, offset " + i + ": " + why);
        }
    }
}
