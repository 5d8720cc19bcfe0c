/* RewriteLog.java - the Java reference's side of the log-size comparison.
 *
 *   java -cp hdrhistogram.jar:. RewriteLog IN.hlog OUT.hlog [MAX_INTERVALS]
 *
 * Reads the intervals of IN (all, or the first MAX_INTERVALS) with
 * HistogramLogReader and writes each back with HistogramLogWriter, in input
 * order, tags kept, against IN's start time: line k of OUT is interval k of
 * IN, as in what bench/java/recode writes with our codec. Prints the number of
 * intervals written.
 */
import java.io.FileOutputStream;
import java.io.PrintStream;

import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.HistogramLogReader;
import org.HdrHistogram.HistogramLogWriter;

public final class RewriteLog {
    private static final double MS_PER_SEC = 1000.0;

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3) {
            System.err.println("usage: RewriteLog IN.hlog OUT.hlog [MAX_INTERVALS]");
            System.exit(2);
        }
        long limit = args.length == 3 ? Long.parseLong(args[2]) : Long.MAX_VALUE;
        long written = 0;
        try (HistogramLogReader reader = new HistogramLogReader(args[0]);
             PrintStream out = new PrintStream(new FileOutputStream(args[1]), false)) {
            HistogramLogWriter writer = new HistogramLogWriter(out);
            EncodableHistogram h;
            while (written < limit && (h = reader.nextIntervalHistogram()) != null) {
                if (written == 0) {
                    long startMs = (long) Math.round(reader.getStartTimeSec() * MS_PER_SEC);
                    writer.outputComment("Rewritten by tailbus bench/java/RewriteLog");
                    writer.outputLogFormatVersion();
                    writer.outputStartTime(startMs);
                    writer.setBaseTime(startMs);
                    writer.outputLegend();
                }
                writer.outputIntervalHistogram(h);
                written++;
            }
        }
        System.out.println(written);
    }
}
