/* Figures.java - per-tag merges of interval histograms, printed as one line per tag.
 *
 * The interop test (tests/interop_java.sh) compares these lines, computed by the
 * HdrHistogram Java reference, with what `tailbus replay --format json` reports.
 * Each tag is merged two ways, because both are "the Java figures" somewhere:
 *   first: into a copy of the tag's first interval histogram, reset and set to
 *          auto-resize, which is what HistogramLogProcessor 2.1.11 does (and what
 *          `tailbus replay` does by default);
 *   new3:  into a `new Histogram(3)` (1 up, 3 digits, auto-resizing), what a program
 *          calling Histogram.add does (and `tailbus replay --digits 3`).
 * Both use Histogram.add, which re-records each bucket at its lowest equivalent
 * value when the layouts differ. Line format (an empty tag is the untagged stream):
 *   <merge> tag=<tag> intervals=N total=N min=V p50=V p90=V p99=V p99_9=V p99_99=V max=V
 */
import java.util.Map;
import java.util.TreeMap;

import org.HdrHistogram.Histogram;

final class Figures {
    static final int NEW_MERGE_DIGITS = 3;
    static final double[] LEVELS = {50.0, 90.0, 99.0, 99.9, 99.99};
    static final String[] KEYS = {"p50", "p90", "p99", "p99_9", "p99_99"};

    private static final class Merge {
        Histogram first;
        final Histogram fresh = new Histogram(NEW_MERGE_DIGITS);
        int intervals;
    }

    /* Sorted by tag, as the test sorts tailbus's lines (byte order; tags are ASCII). */
    private final Map<String, Merge> tags = new TreeMap<>();

    void add(String tag, Histogram interval) {
        Merge m = tags.computeIfAbsent(tag == null ? "" : tag, t -> new Merge());
        if (m.first == null) {
            m.first = interval.copy();
            m.first.reset();
            m.first.setAutoResize(true);
        }
        m.first.add(interval);
        m.fresh.add(interval);
        m.intervals++;
    }

    static String line(String merge, String tag, int intervals, Histogram h) {
        StringBuilder b = new StringBuilder();
        b.append(merge).append(" tag=").append(tag).append(" intervals=").append(intervals)
                .append(" total=").append(h.getTotalCount()).append(" min=").append(h.getMinValue());
        for (int i = 0; i < LEVELS.length; i++)
            b.append(' ').append(KEYS[i]).append('=').append(h.getValueAtPercentile(LEVELS[i]));
        return b.append(" max=").append(h.getMaxValue()).toString();
    }

    void print() {
        for (Map.Entry<String, Merge> e : tags.entrySet())
            System.out.println(line("first", e.getKey(), e.getValue().intervals, e.getValue().first));
        for (Map.Entry<String, Merge> e : tags.entrySet())
            System.out.println(line("new3", e.getKey(), e.getValue().intervals, e.getValue().fresh));
    }
}
