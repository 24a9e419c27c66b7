// Several TLC runs in one JVM, each in a class loader of its own (see resumecheck/tlc/warm.py).
//
// Why: a small TLC run (a mutant row of `resume-check spec`) costs about a CPU-second, nearly
// all of it fixed: JVM start-up, loading and verifying TLC's classes, interpreting and
// compiling the JDK code that SANY and TLC use. TLC 2.15 keeps its settings and tables in
// static fields (TLCGlobals, UniqueString, ToolIO, ...), so two runs cannot share its classes;
// TLC's own test suite loads each model in a fresh class loader for this reason. So does this
// driver: the JVM and the JDK's classes (already loaded and compiled) are shared, TLC's are
// loaded anew for every run and dropped afterwards.
//
// Protocol, one line per run on stdin, fields separated by tabs:
//     ID <TAB> STDOUT-FILE <TAB> STDERR-FILE <TAB> TLC-ARG ...
// The run's System.out and System.err go to the two files; when it is over the driver
// prints `ID <TAB> EXIT-STATUS` on its own stdout, the status TLC's main would have passed to
// System.exit. A run that throws, or calls System.exit itself (which ends the driver), gets
// no such line: the caller then runs it again alone, in a JVM of its own, so the answer it
// reports is the one a plain TLC gives. End of input ends the driver; so does a heap grown
// too large, which the driver announces with a third field, `retire`, after the status.
package resumecheck;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.Arrays;

public final class WarmTLC {
    /** Bytes of heap taken from the system after which the driver ends (see below). */
    private static final long RETIRE_ABOVE = 1L << 30;

    private WarmTLC() {
    }

    public static void main(final String[] args) throws Exception {
        final URL[] jar = {Paths.get(args[0]).toUri().toURL()};
        final PrintStream out = System.out;
        final PrintStream err = System.err;
        final BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            final String[] fields = line.split("\t", -1);
            final String[] tlcArgs = Arrays.copyOfRange(fields, 3, fields.length);
            Integer status = null;
            try (PrintStream rowOut = new PrintStream(
                            new FileOutputStream(fields[1]), true, StandardCharsets.UTF_8);
                    PrintStream rowErr = new PrintStream(
                            new FileOutputStream(fields[2]), true, StandardCharsets.UTF_8)) {
                System.setOut(rowOut);
                System.setErr(rowErr);
                try {
                    status = run(jar, tlcArgs);
                } catch (Throwable failure) {
                    failure.printStackTrace(rowErr);
                } finally {
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
            // another for the next run.
            final boolean retire = Runtime.getRuntime().totalMemory() > RETIRE_ABOVE;
            out.println(fields[0] + "\t" + (status != null ? status : "crashed")
                    + (retire ? "\tretire" : ""));
            out.flush();
            if (retire) {
                break;
            }
        }
        // TLC leaves threads behind (RMI's, for its fingerprint set) that would keep the JVM up.
        System.exit(0);
    }

    /** What tlc2.TLC.main does, with its System.exit calls turned into a returned status. */
    private static int run(final URL[] jar, final String[] tlcArgs) throws Exception {
        try (URLClassLoader loader =
                new URLClassLoader(jar, ClassLoader.getPlatformClassLoader())) {
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
                final Class<?> exitStatus =
                        Class.forName("tlc2.output.EC$ExitStatus", true, loader);
                return (Integer) exitStatus.getMethod("errorConstantToExitStatus", int.class)
                        .invoke(null, code);
            } finally {
                Thread.currentThread().setContextClassLoader(previous);
            }
        }
    }
}
