package dev.cdcsandbox.connect;

import java.lang.reflect.Field;
import java.util.Map;

import org.apache.kafka.common.config.ConfigException;

import io.apicurio.registry.utils.converter.AvroConverter;
import io.apicurio.registry.utils.converter.avro.AvroData;

/**
 * Apicurio's Avro converter, writing an explicit NULL as NULL.
 *
 * <p>Debezium gives a column's DEFAULT to its Connect schema, and Connect's {@code Struct.get} returns that default
 * for a field holding null (KAFKA-8713). Apicurio 2.6's {@code AvroData} has Confluent's remedy, a flag that reads
 * fields with {@code getWithoutDefault}, but no setting reaches it. This converter takes Confluent's setting,
 * {@code ignore.default.for.nullables} (true unless set), and sets that flag, so a team can copy either value from
 * its production connector.
 */
public class NullKeepingAvroConverter<T> extends AvroConverter<T> {

    public static final String IGNORE_DEFAULT_FOR_NULLABLES = "ignore.default.for.nullables";

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        super.configure(configs, isKey);
        Object setting = configs.get(IGNORE_DEFAULT_FOR_NULLABLES);
        boolean ignoreDefaults = setting == null || Boolean.parseBoolean(setting.toString().trim());
        try {
            AvroData avroData = (AvroData) declared(AvroConverter.class, "avroData").get(this);
            declared(AvroData.class, "ignoreDefaultForNullables").setBoolean(avroData, ignoreDefaults);
        } catch (ReflectiveOperationException e) {
            throw new ConfigException("this Apicurio converter has no ignoreDefaultForNullables flag to set ("
                    + e + "); pin the Apicurio release the sandbox declares");
        }
    }

    private static Field declared(Class<?> owner, String name) throws NoSuchFieldException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}
