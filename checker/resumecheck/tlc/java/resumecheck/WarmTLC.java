// Several TLC runs in one JVM (see resumecheck/tlc/warm.py).
//
// Why: a small TLC run (a mutant row of `resume-check spec`) costs about a CPU-second, nearly
// all of it fixed: JVM start-up, loading and verifying TLC's classes, interpreting and
// compiling the code that SANY (TLC's parser) and TLC run. This driver runs them one after
// another in one JVM, so that the JVM and the JDK's classes, loaded and compiled, are shared.
//
// TLC 2.15 keeps its settings and tables in static fields (TLCGlobals, ModelValue's table,
// the fingerprint set, ...), so two model-checking runs cannot share its classes: TLC's own
// test suite loads each model in a class loader of its own, and so does this driver (a
// RunLoader per run). SANY is different: the TLA+ Toolbox parses with it again and again in
// one JVM, and it re-initializes its own tables at the start of every parse. So SANY, with
// the helpers it shares with TLC, is loaded once per driver (the SharedLoader) and stays
// compiled: cold, it was about half of what a small run in a fresh loader costs. The
// Partition below says which classes are shared; what shared classes keep between runs is
// put back before each run (Statics): every non-final static field to its value after class
// initialization, the intern table to the names class initialization interned (TLC orders
// strings by when they were interned), and every interned name's slot (UniqueString's loc,
// which TLC assigns per run) to none. A shared class that asks for a class outside the
// partition is refused; the run is then answered `crashed` and the driver retires, so the
// caller runs it again alone in a JVM of its own and the answer is always a plain TLC's.
//
// Protocol, one line per run on stdin, fields separated by tabs:
//     ID <TAB> STDOUT-FILE <TAB> STDERR-FILE <TAB> N <TAB> OPTION ... <TAB> TLC-ARG ...
// N options come first, each what a plain run's java command line would have said:
// `-Dname=value`, a system property set for this run alone (and put back after it: judging
// names each batch's trace data file and its library path so), and `-cp:FOLDER`, a class
// folder put before the jar in this run's loader (the trace data override and its index,
// tlc2.overrides.TLCOverrides, which TLC looks for on its own loader's class path). Runs
// are one at a time, so a property never reaches another run; a caller that runs several
// at once starts a driver for each.
// The run's System.out and System.err go to the two files; when it is over the driver
// prints `ID <TAB> EXIT-STATUS` on its own stdout, the status TLC's main would have passed to
// System.exit. A run that throws, or calls System.exit itself (which ends the driver), gets
// no status (`crashed`, or no line at all): the caller then runs it again alone. End of
// input ends the driver; so does a heap grown too large, or a refused class, which the
// driver announces with a third field, `retire`, after the status.
package resumecheck;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.rmi.NoSuchObjectException;
import java.rmi.Remote;
import java.rmi.server.UnicastRemoteObject;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

public final class WarmTLC {
    /** Bytes of heap taken from the system after which the driver ends (see below). */
    private static final long RETIRE_ABOVE = 1L << 30;

    private WarmTLC() {
    }

    public static void main(final String[] args) throws Exception {
        final String jarPath = args[0];
        final URL[] jar = {Paths.get(jarPath).toUri().toURL()};
        final PrintStream out = System.out;
        final PrintStream err = System.err;
        // The trace data override then leaves its progress to finish() (TraceDataOverride).
        System.setProperty("resumecheck.warm", "true");
        SharedLoader shared = null;
        Statics statics = null;
        if (!(args.length > 1 && args[1].equals("--no-shared-parser"))) {
            try {
                shared = new SharedLoader(jar);
                statics = Statics.of(shared, jarPath, out, err);
            } catch (Exception | LinkageError notThisJar) {
                // Another TLC than the one the Partition was written for: no shared parser.
                err.println("resume-check: SANY is loaded for every run: " + notThisJar);
                shared = null;
            }
        }
        final BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            final String[] fields = line.split("\t", -1);
            final int options = Integer.parseInt(fields[3]);
            final String[] runOptions = Arrays.copyOfRange(fields, 4, 4 + options);
            final String[] tlcArgs = Arrays.copyOfRange(fields, 4 + options, fields.length);
            final List<URL> classes = new ArrayList<>();
            final Map<String, String> properties = new HashMap<>();
            for (final String option : runOptions) {
                if (option.startsWith("-cp:")) {
                    classes.add(Paths.get(option.substring(4)).toUri().toURL());
                } else if (option.startsWith("-D") && option.indexOf('=') > 2) {
                    final int eq = option.indexOf('=');
                    properties.put(option.substring(2, eq), option.substring(eq + 1));
                } else {
                    throw new IllegalArgumentException("not a run option: " + option);
                }
            }
            classes.addAll(Arrays.asList(jar));
            final URL[] runPath = classes.toArray(new URL[0]);
            final Map<String, String> before = setProperties(properties);
            Integer status = null;
            boolean refused = false;
            try (PrintStream rowOut = new PrintStream(
                            new FileOutputStream(fields[1]), true, StandardCharsets.UTF_8);
                    PrintStream rowErr = new PrintStream(
                            new FileOutputStream(fields[2]), true, StandardCharsets.UTF_8)) {
                System.setOut(rowOut);
                System.setErr(rowErr);
                try {
                    final ClassLoader parent;
                    if (shared != null) {
                        statics.restore();
                        parent = shared;
                    } else {
                        parent = ClassLoader.getPlatformClassLoader();
                    }
                    status = run(new RunLoader(runPath, parent, shared != null), tlcArgs);
                } catch (Throwable failure) {
                    failure.printStackTrace(rowErr);
                } finally {
                    setProperties(before);
                    if (statics != null) {
                        try {
                            statics.clearTools();
                        } catch (final ReflectiveOperationException | RuntimeException kept) {
                            // cleared before the next run in any case (restore)
                        }
                    }
                    if (shared != null) {
                        final List<String> names = shared.takeRefused();
                        if (!names.isEmpty()) {
                            rowErr.println("resume-check: SANY's classes asked for " + names);
                            refused = true;
                        }
                    }
                    System.setOut(out);
                    System.setErr(err);
                }
            }
            // What the run left behind -- its class loader, its fingerprint set (an array TLC
            // sizes by the heap, allocated straight in the old generation) -- is garbage now,
            // which only a full collection frees: without one the JVM grew to 2.1 GB over
            // `resume-check spec`, twice its largest run, and a full collection after a run
            // costs about what the shared JVM saves (0.3-0.4 CPU-s). So a driver whose heap
            // has grown past RETIRE_ABOVE says so with its answer and ends; the caller starts
            // another for the next run. A run that had a class refused may have left a shared
            // class unusable: its driver ends too.
            final boolean retire = refused || Runtime.getRuntime().totalMemory() > RETIRE_ABOVE;
            out.println(fields[0] + "\t" + (status != null && !refused ? status : "crashed")
                    + (retire ? "\tretire" : ""));
            out.flush();
            if (retire) {
                break;
            }
        }
        // TLC leaves threads behind (RMI's, for its fingerprint set) that would keep the JVM up.
        System.exit(0);
    }

    /** Sets (or, for a null value, clears) system properties; returns what they were. */
    private static Map<String, String> setProperties(final Map<String, String> properties) {
        final Map<String, String> before = new HashMap<>();
        for (final Map.Entry<String, String> entry : properties.entrySet()) {
            final String old = entry.getValue() == null
                    ? System.clearProperty(entry.getKey())
                    : System.setProperty(entry.getKey(), entry.getValue());
            before.put(entry.getKey(), old);
        }
        return before;
    }

    /** What tlc2.TLC.main does, with its System.exit calls turned into a returned status. */
    private static int run(final RunLoader loader, final String[] tlcArgs) throws Exception {
        try (loader; Exports exports = new Exports(loader)) {
            final ClassLoader previous = Thread.currentThread().getContextClassLoader();
            Thread.currentThread().setContextClassLoader(loader);
            try {
                final Class<?> tlcClass = Class.forName("tlc2.TLC", true, loader);
                final Object tlc = tlcClass.getConstructor().newInstance();
                if (!(Boolean) tlcClass.getMethod("handleParameters", String[].class)
                        .invoke(tlc, (Object) tlcArgs)) {
                    return 1;
                }
                final Method checkEnvironment = tlcClass.getDeclaredMethod("checkEnvironment");
                checkEnvironment.setAccessible(true);
                if (!(Boolean) checkEnvironment.invoke(tlc)) {
                    return 1;
                }
                final String mainFile = (String) tlcClass.getMethod("getMainFile").invoke(tlc);
                final Class<?> fileUtil = Class.forName("util.FileUtil", true, loader);
                final String dir = (String) fileUtil.getMethod("parseDirname", String.class)
                        .invoke(null, mainFile);
                final Class<?> resolverType = Class.forName("util.FilenameToStream", true, loader);
                final Class<?> simple = Class.forName("util.SimpleFilenameToStream", true, loader);
                final Object resolver = dir.isEmpty()
                        ? simple.getConstructor().newInstance()
                        : simple.getConstructor(String.class).newInstance(dir);
                tlcClass.getMethod("setResolver", resolverType).invoke(tlc, resolver);
                final int code = (Integer) tlcClass.getMethod("process").invoke(tlc);
                finish(loader);
                final Class<?> exitStatus =
                        Class.forName("tlc2.output.EC$ExitStatus", true, loader);
                return (Integer) exitStatus.getMethod("errorConstantToExitStatus", int.class)
                        .invoke(null, code);
            } finally {
                Thread.currentThread().setContextClassLoader(previous);
            }
        }
    }

    /**
     * Unexports, when a run is over, the RMI remote objects it exported. TLC's fingerprint
     * sets are remote objects (for distributed TLC), exported as they are made, and RMI's
     * object table keeps each export with the context class loader of its time: the run's.
     * In a plain run the JVM ends; in the driver every run's class loader stayed reachable,
     * and with it its classes' statics -- TLC's model checker, its fingerprint set, SANY's
     * parse of its modules -- so the heap grew by 30-80 MB a judge run, full collections got
     * dearer, and the driver retired every 12-18 judge calls. RMI's table is read by
     * reflection (the driver is started with `--add-opens
     * java.rmi/sun.rmi.transport=ALL-UNNAMED`); without that, or with another JDK's RMI, the
     * exports stay, as before. (What else held the loaders is softly reachable: the driver
     * runs with -XX:SoftRefLRUPolicyMSPerMB=0, see resumecheck/tlc/warm.py.)
     */
    private static final class Exports implements AutoCloseable {
        private final ClassLoader loader;

        Exports(final ClassLoader loader) {
            this.loader = loader;
        }

        @Override
        public void close() {
            final List<Remote> exported = new ArrayList<>();
            try {
                final Class<?> table = Class.forName("sun.rmi.transport.ObjectTable");
                final Class<?> target = Class.forName("sun.rmi.transport.Target");
                final Field objects = table.getDeclaredField("objTable");
                final Field lock = table.getDeclaredField("tableLock");
                final Field ccl = target.getDeclaredField("ccl");
                final Method impl = target.getDeclaredMethod("getImpl");
                objects.setAccessible(true);
                lock.setAccessible(true);
                ccl.setAccessible(true);
                impl.setAccessible(true);
                synchronized (lock.get(null)) {
                    for (final Object export : ((Map<?, ?>) objects.get(null)).values()) {
                        final Object remote = ccl.get(export) == loader ? impl.invoke(export) : null;
                        if (remote != null) {
                            exported.add((Remote) remote);
                        }
                    }
                }
            } catch (final ReflectiveOperationException | RuntimeException closed) {
                return; // no --add-opens, or another JDK's RMI: the exports stay
            }
            for (final Remote remote : exported) {
                try {
                    UnicastRemoteObject.unexportObject(remote, true);
                } catch (final NoSuchObjectException gone) {
                    // unexported meanwhile
                }
            }
        }
    }

    /**
     * What a plain run prints in its shutdown hooks, printed when this run is over: the trace
     * data override's progress (TraceDataOverride.printProgress), when the run loaded it.
     */
    private static void finish(final RunLoader loader) throws ReflectiveOperationException {
        final Class<?> data = loader.loaded("resumecheck.TraceDataOverride");
        if (data != null) {
            data.getMethod("printProgress").invoke(null);
        }
    }

    /** Which of tla2tools.jar's classes are loaded once per driver, and which once per run. */
    static final class Partition {
        /** SANY, and the packages it is written with. */
        private static final String[] SHARED_PACKAGES = {"tla2sany.", "util.", "pcal."};

        /**
         * TLC classes that SANY's classes use and that hold nothing of a run: constants
         * (EC, ToolGlobals), the built-in operators' opcodes by name (BuiltInOPs), the
         * interface of coverage costs with its no-op (CostModel), the fingerprint polynomials
         * that TLC sets again at the start of every run (FP64), an interface (InternRMI).
         */
        private static final Set<String> SHARED_CLASSES = Set.of(
                "tlc2.output.EC", "tlc2.output.EC$ExitStatus", "tlc2.tool.BuiltInOPs",
                "tlc2.tool.ToolGlobals", "tlc2.tool.coverage.CostModel",
                "tlc2.tool.coverage.CostModel$1", "tlc2.util.FP64",
                "tlc2.tool.distributed.InternRMI");

        /**
         * Helpers in SANY's packages that read TLC's run settings (TLCGlobals) or print
         * through TLC's message table (MP), and the TLC helpers their methods name (which
         * the bytecode verifier loads): each side gets a copy of its own, so that TLC's copy
         * sees this run's TLC. They hold nothing themselves.
         */
        private static final Set<String> COPIED = Set.of(
                "util.FileUtil", "util.DebugPrinter", "util.Assert", "util.MailSender",
                "util.BufferedDataInputStream", "tlc2.util.BigInt", "tlc2.util.ByteUtils",
                "tlc2.util.ExternalSortable");

        /**
         * Classes taken out of the partition by the system property `resumecheck.unshared`
         * (names, comma-separated): a test makes a shared class ask for one of them.
         */
        private static final Set<String> UNSHARED =
                Set.of(System.getProperty("resumecheck.unshared", "").split(","));

        private Partition() {
        }

        /** A run's classes take this class from the SharedLoader. */
        static boolean shared(final String name) {
            if (UNSHARED.contains(outer(name))) {
                return false;
            }
            if (SHARED_CLASSES.contains(name)) {
                return true;
            }
            if (COPIED.contains(outer(name))) {
                return false;
            }
            for (final String prefix : SHARED_PACKAGES) {
                if (name.startsWith(prefix)) {
                    return true;
                }
            }
            return false;
        }

        /** The SharedLoader may define this class. */
        static boolean sharedSide(final String name) {
            final String outer = outer(name);
            return shared(name) || COPIED.contains(outer) && !UNSHARED.contains(outer);
        }

        private static String outer(final String name) {
            final int inner = name.indexOf('$');
            return inner < 0 ? name : name.substring(0, inner);
        }
    }

    /** A class loader that finds each class by a rule of its own, under the JDK's locking. */
    abstract static class RuleLoader extends URLClassLoader {
        RuleLoader(final URL[] jar, final ClassLoader parent) {
            super(jar, parent);
        }

        /** The class `name`, which this loader has not loaded yet. */
        abstract Class<?> locate(String name) throws ClassNotFoundException;

        @Override
        protected final Class<?> loadClass(final String name, final boolean resolve)
                throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                Class<?> found = findLoadedClass(name);
                if (found == null) {
                    found = locate(name);
                }
                if (resolve) {
                    resolveClass(found);
                }
                return found;
            }
        }
    }

    /** SANY's classes, loaded once; a class outside the partition is refused and noted. */
    static final class SharedLoader extends RuleLoader {
        private final Set<String> refused = ConcurrentHashMap.newKeySet();

        SharedLoader(final URL[] jar) {
            super(jar, ClassLoader.getPlatformClassLoader());
        }

        @Override
        Class<?> locate(final String name) throws ClassNotFoundException {
            try {
                return getParent().loadClass(name);
            } catch (ClassNotFoundException notTheJdks) {
                if (!Partition.sharedSide(name)) {
                    refused.add(name);
                    throw new ClassNotFoundException(name + " is a run's, not SANY's");
                }
                return findClass(name);
            }
        }

        /** The names refused since the last call. */
        List<String> takeRefused() {
            final List<String> names = new ArrayList<>(refused);
            refused.removeAll(names);
            return names;
        }
    }

    /** One run's classes: TLC's own, with SANY's from the SharedLoader when there is one. */
    static final class RunLoader extends RuleLoader {
        private final boolean delegateShared;

        RunLoader(final URL[] path, final ClassLoader parent, final boolean delegateShared) {
            super(path, parent);
            this.delegateShared = delegateShared;
        }

        /** The class `name` if this run has loaded it, else null. */
        Class<?> loaded(final String name) {
            synchronized (getClassLoadingLock(name)) {
                return findLoadedClass(name);
            }
        }

        @Override
        Class<?> locate(final String name) throws ClassNotFoundException {
            if (delegateShared && Partition.shared(name)) {
                return getParent().loadClass(name);
            }
            try {
                return ClassLoader.getPlatformClassLoader().loadClass(name);
            } catch (ClassNotFoundException notTheJdks) {
                return findClass(name);
            }
        }
    }

    /** The static state of the shared classes as class initialization left it. */
    static final class Statics {
        private final List<Field> fields = new ArrayList<>();
        private final List<Object> values = new ArrayList<>();
        private final Method names;
        private final Method setLoc;
        private final Method setVariableCount;
        private final Field internTable;
        private final Field initialContext;
        private final Field contextTable;
        private final Field pairInfo;
        private final Field tools;
        private final Object noTools;
        /** The intern table's own fields (its array, count, next token) after initialization. */
        private final List<Field> tableFields = new ArrayList<>();
        private final List<Object> tableValues = new ArrayList<>();

        private final PrintStream driverOut;
        private final PrintStream driverErr;

        private Statics(final SharedLoader loader, final PrintStream out, final PrintStream err)
                throws ReflectiveOperationException {
            driverOut = out;
            driverErr = err;
            final Class<?> uniqueString = Class.forName("util.UniqueString", true, loader);
            internTable = uniqueString.getField("internTbl");
            names = Class.forName("util.InternTable", true, loader).getMethod("toMap");
            setLoc = uniqueString.getMethod("setLoc", int.class);
            setVariableCount = uniqueString.getMethod("setVariableCount", int.class);
            final Class<?> context = Class.forName("tla2sany.semantic.Context", true, loader);
            initialContext = context.getDeclaredField("initialContext");
            contextTable = context.getDeclaredField("table");
            pairInfo = Class.forName("tla2sany.semantic.Context$Pair", true, loader)
                    .getDeclaredField("info");
            final Class<?> node = Class.forName("tla2sany.semantic.SemanticNode", true, loader);
            tools = node.getDeclaredField("tools");
            final Field empty = node.getDeclaredField("EmptyArr");
            for (final Field field
                    : new Field[] {initialContext, contextTable, pairInfo, tools, empty}) {
                field.setAccessible(true);
            }
            noTools = empty.get(null);
        }

        /**
         * Takes TLC's objects off SANY's built-in operators (the initial context, made once
         * per driver). TLC hangs values of its own classes on semantic nodes
         * (SemanticNode.tools), so the built-ins held the last run's values -- and through
         * their classes its class loader and all it kept -- into the next run, which in a
         * plain JVM starts with built-ins that hold none.
         */
        void clearTools() throws ReflectiveOperationException {
            final Object initial = initialContext.get(null);
            if (initial == null) {
                return;
            }
            for (final Object pair : ((Map<?, ?>) contextTable.get(initial)).values()) {
                final Object symbol = pairInfo.get(pair);
                if (symbol != null) {
                    tools.set(symbol, noTools);
                }
            }
        }

        /**
         * Loads and initializes every shared class of the jar and notes its statics. A
         * static that holds the driver's own stdout or stderr (ToolIO's streams) is the
         * run's stdout or stderr when put back, as it would be in a fresh loader.
         */
        static Statics of(final SharedLoader loader, final String jarPath,
                final PrintStream out, final PrintStream err) throws Exception {
            final Statics statics = new Statics(loader, out, err);
            try (JarFile jar = new JarFile(jarPath)) {
                final Enumeration<JarEntry> entries = jar.entries();
                while (entries.hasMoreElements()) {
                    final String entry = entries.nextElement().getName();
                    if (!entry.endsWith(".class")) {
                        continue;
                    }
                    final String name =
                            entry.substring(0, entry.length() - 6).replace('/', '.');
                    if (Partition.shared(name)) {
                        statics.note(Class.forName(name, true, loader));
                    }
                }
            }
            final List<String> refused = loader.takeRefused();
            if (!refused.isEmpty()) {
                throw new IllegalStateException("SANY's classes asked for " + refused);
            }
            statics.noteTable();
            return statics;
        }

        private void note(final Class<?> type) throws IllegalAccessException {
            for (final Field field : type.getDeclaredFields()) {
                final int modifiers = field.getModifiers();
                if (Modifier.isStatic(modifiers) && !Modifier.isFinal(modifiers)) {
                    field.setAccessible(true);
                    fields.add(field);
                    values.add(field.get(null));
                }
            }
        }

        /**
         * Notes the intern table as class initialization left it. TLC orders strings, and
         * so record fields and the elements of sets, by their intern token (UniqueString's
         * compareTo), which is the order in which names were first interned: a table that
         * kept the names of earlier runs would give this run another order than a fresh JVM
         * (another state first among equals, another counterexample). Put back before each
         * run, it holds only what class initialization interned, as in every first run.
         */
        private void noteTable() throws IllegalAccessException {
            final Object table = internTable.get(null);
            for (final Field field : table.getClass().getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers())) {
                    continue;
                }
                field.setAccessible(true);
                tableFields.add(field);
                tableValues.add(copy(field.get(table)));
            }
        }

        private static Object copy(final Object value) {
            return value instanceof Object[] ? ((Object[]) value).clone() : value;
        }

        /** Puts back the noted statics and intern table; clears the slots of interned names. */
        void restore() throws ReflectiveOperationException {
            for (int i = 0; i < fields.size(); i++) {
                final Object value = values.get(i);
                fields.get(i).set(null, value == driverOut ? System.out
                        : value == driverErr ? System.err : value);
            }
            final Object table = internTable.get(null);
            for (int i = 0; i < tableFields.size(); i++) {
                tableFields.get(i).set(table, copy(tableValues.get(i)));
            }
            final Map<?, ?> all = (Map<?, ?>) names.invoke(table);
            for (final Object name : all.values()) {
                setLoc.invoke(name, -1);
            }
            setVariableCount.invoke(null, 0);
            clearTools();
        }
    }
}
