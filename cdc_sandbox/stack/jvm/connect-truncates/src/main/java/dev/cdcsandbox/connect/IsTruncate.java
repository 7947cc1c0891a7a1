package dev.cdcsandbox.connect;

import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * True for a Debezium change event whose operation is a truncate ({@code op = "t"}). Used as
 * {@code transforms.unwrap.predicate} with {@code negate=true}, it lets truncate events pass the flattening
 * transform unchanged, as Debezium's own envelope, instead of being dropped by it.
 */
public class IsTruncate<R extends ConnectRecord<R>> implements Predicate<R> {

    private static final String OPERATION = "op";
    private static final String TRUNCATE = "t";

    @Override
    public boolean test(R record) {
        Schema schema = record.valueSchema();
        if (!(record.value() instanceof Struct value) || schema == null || schema.type() != Schema.Type.STRUCT) {
            return false;
        }
        Field operation = schema.field(OPERATION);
        return operation != null && TRUNCATE.equals(value.get(operation));
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void close() {
    }
}
