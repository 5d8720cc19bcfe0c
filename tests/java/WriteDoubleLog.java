/* WriteDoubleLog.java - an interval log of DoubleHistogram intervals, written by the
 * Java reference.
 *
 *   java -cp hdrhistogram.jar:. WriteDoubleLog OUT.hlog
 *
 * HistogramLogWriter writes a DoubleHistogram's own encoding (a cookie of its
 * own around an integer histogram), which tailbus refuses by name. Two one-second
 * intervals of a DoubleHistogram(3) holding values in milliseconds (0.5 .. 2.5),
 * the second tagged "D", so both the untagged and the tagged path see one.
 */
import java.io.File;

import org.HdrHistogram.DoubleHistogram;
import org.HdrHistogram.HistogramLogWriter;

public final class WriteDoubleLog {
    /* Sun Nov 30 18:00:00 UTC 2025, as WriteLog. */
    static final long START_MS = 1764525600000L;
    static final long INTERVAL_MS = 1000;
    static final int DIGITS = 3;
    static final int RECORDS = 100;

    private static DoubleHistogram interval(long startMs, String tag) {
        DoubleHistogram h = new DoubleHistogram(DIGITS);
        for (int i = 0; i < RECORDS; i++)
            h.recordValue(0.5 + 2.0 * i / RECORDS);
        h.setStartTimeStamp(startMs);
        h.setEndTimeStamp(startMs + INTERVAL_MS);
        h.setTag(tag);
        return h;
    }

    public static void main(String[] args) throws Exception {
        HistogramLogWriter w = new HistogramLogWriter(new File(args[0]));
        w.outputLogFormatVersion();
        w.outputStartTime(START_MS);
        w.setBaseTime(START_MS);
        w.outputBaseTime(START_MS);
        w.outputLegend();
        w.outputIntervalHistogram(interval(START_MS, null));
        w.outputIntervalHistogram(interval(START_MS + INTERVAL_MS, "D"));
        w.close();
    }
}
