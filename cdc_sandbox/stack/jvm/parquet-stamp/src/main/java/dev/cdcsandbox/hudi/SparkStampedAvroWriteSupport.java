package dev.cdcsandbox.hudi;

import java.util.Properties;

import org.apache.avro.Schema;
import org.apache.hudi.avro.HoodieAvroWriteSupport;
import org.apache.hudi.common.bloom.BloomFilter;
import org.apache.hudi.common.util.Option;
import org.apache.parquet.schema.MessageType;

/**
 * Hudi's Avro write support, with the Spark version in every file's footer ({@code org.apache.spark.version}), which
 * the job passes as the write property {@link #SPARK_VERSION}. Spark reads a file's dates and times as proleptic
 * Gregorian, as Hudi writes them, only when the footer names a Spark 3 writer.
 */
public class SparkStampedAvroWriteSupport<T> extends HoodieAvroWriteSupport<T> {

    public static final String SPARK_VERSION = "sandbox.parquet.spark.version";
    private static final String FOOTER_KEY = "org.apache.spark.version";

    public SparkStampedAvroWriteSupport(MessageType schema, Schema avroSchema, Option<BloomFilter> bloomFilter,
                                        Properties properties) {
        super(schema, avroSchema, bloomFilter, properties);
        String version = properties.getProperty(SPARK_VERSION);
        if (version == null || version.isEmpty()) {
            throw new IllegalArgumentException(SPARK_VERSION + " is not set: the job passes the running Spark's version");
        }
        addFooterMetadata(FOOTER_KEY, version);
    }
}
