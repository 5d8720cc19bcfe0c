/* WriteLog.java - write an interval log with the Java reference and print its figures.
 *
 *   java -cp hdrhistogram.jar:. WriteLog OUT.hlog
 *
 * Writes INTERVALS intervals of one second with HistogramLogWriter (the header
 * Java writes: comment, format version, StartTime, BaseTime, legend), one line per
 * stream and interval: untagged, "A" and "B". The streams use three different
 * layouts on purpose, so a reader must honour each payload's own L, H and S:
 *   untagged  new Histogram(3)             auto-resizing: H differs between lines;
 *                                          also a few zero values (min = 0)
 *   A         new Histogram(1 h in ns, 3)  the collector's default layout
 *   B         new Histogram(1000, 1 h, 2)  coarse, jHiccup-like; counts > 1 per record
 * Values are log-uniform over each stream's range from java.util.Random with a
 * fixed seed (its algorithm is specified, so the log is the same on every JVM).
 * Then prints, per tag, the figures of the in-memory histograms merged as
 * Figures.java describes: the truth a reader of the log must reproduce.
 */
import java.io.File;
import java.util.Random;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

public final class WriteLog {
    static final long SEED = 20251130L;
    static final int INTERVALS = 12;
    static final long INTERVAL_MS = 1000;
    /* Sun Nov 30 18:00:00.250 UTC 2025: a start time with milliseconds. */
    static final long START_MS = 1764525600250L;
    static final long NS_PER_US = 1000L, NS_PER_MS = 1000000L, NS_PER_SEC = 1000000000L;
    static final long HOUR_NS = 3600L * NS_PER_SEC;
    static final int ZEROS_PER_INTERVAL = 3;
    static final int MAX_COUNT_PER_RECORD = 4;

    private static final class Stream {
        final String tag; /* null: untagged */
        final long lowest, highest;
        final int records;
        final boolean zeros, counts;

        Stream(String tag, long lowest, long highest, int records, boolean zeros, boolean counts) {
            this.tag = tag;
            this.lowest = lowest;
            this.highest = highest;
            this.records = records;
            this.zeros = zeros;
            this.counts = counts;
        }

        Histogram newHistogram() {
            if (tag == null)
                return new Histogram(3);
            if (tag.equals("A"))
                return new Histogram(HOUR_NS, 3);
            return new Histogram(1000, HOUR_NS, 2);
        }
    }

    private static final Stream[] STREAMS = {
        new Stream(null, 1, NS_PER_SEC, 4000, true, false),
        new Stream("A", NS_PER_US, 10 * NS_PER_SEC, 4000, false, false),
        new Stream("B", 10 * NS_PER_US, 100 * NS_PER_MS, 1500, false, true),
    };

    /* Log-uniform in [lo, hi]. */
    static long nextValue(Random r, long lo, long hi) {
        double v = Math.exp(Math.log(lo) + r.nextDouble() * (Math.log(hi) - Math.log(lo)));
        return Math.max(lo, Math.min(hi, (long) v));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: WriteLog OUT.hlog");
            System.exit(2);
        }
        Random random = new Random(SEED);
        Figures figures = new Figures();
        HistogramLogWriter w = new HistogramLogWriter(new File(args[0]));
        w.outputComment("[Written by tailbus tests/java/WriteLog.java]");
        w.outputLogFormatVersion();
        w.outputStartTime(START_MS);
        w.setBaseTime(START_MS);
        w.outputBaseTime(START_MS);
        w.outputLegend();
        for (int i = 0; i < INTERVALS; i++) {
            long start = START_MS + i * INTERVAL_MS;
            for (Stream s : STREAMS) {
                Histogram h = s.newHistogram();
                for (int k = 0; k < s.records; k++) {
                    long v = nextValue(random, s.lowest, s.highest);
                    h.recordValueWithCount(v, s.counts ? 1 + random.nextInt(MAX_COUNT_PER_RECORD) : 1);
                }
                if (s.zeros)
                    h.recordValueWithCount(0, ZEROS_PER_INTERVAL);
                h.setStartTimeStamp(start);
                h.setEndTimeStamp(start + INTERVAL_MS);
                h.setTag(s.tag);
                w.outputIntervalHistogram(h);
                figures.add(s.tag, h);
            }
        }
        w.close();
        figures.print();
    }
}
