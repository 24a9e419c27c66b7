// The index TLC 2.15 asks for module overrides (SpecProcessor loads tlc2.overrides.TLCOverrides
// from its class path): resume-check's one override, the batch's TraceLog read from a file.
// Only on TLC's class path when resume-check hands a batch over that way (resumecheck.batch).
package tlc2.overrides;

import resumecheck.TraceDataOverride;

public final class TLCOverrides implements ITLCOverrides {
    @Override
    @SuppressWarnings("rawtypes")
    public Class[] get() {
        return new Class[] {TraceDataOverride.class};
    }
}
