/* ReadLog.java - read an interval log with the Java reference and print its figures.
 *
 *   java -cp hdrhistogram.jar:. ReadLog LOG
 *
 * Every interval line (tagged or not) is read with HistogramLogReader and merged
 * per tag; Figures.java says how and what is printed. The interop test runs it on
 * the log tailbus's gen_log writes (tailbus writes, Java reads).
 */
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public final class ReadLog {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ReadLog LOG");
            System.exit(2);
        }
        Figures figures = new Figures();
        int lines = 0;
        try (HistogramLogReader reader = new HistogramLogReader(args[0])) {
            EncodableHistogram e;
            while ((e = reader.nextIntervalHistogram()) != null) {
                if (!(e instanceof Histogram))
                    throw new IllegalStateException("not an integer Histogram: " + e.getClass());
                figures.add(e.getTag(), (Histogram) e);
                lines++;
            }
        }
        if (lines == 0) {
            System.err.println("ReadLog: no interval histograms in " + args[0]);
            System.exit(1);
        }
        figures.print();
    }
}
