// iLBC encoder front end for make_codec_captures.sh (section ilbc): encodes raw 8 kHz 16-bit
// little-endian mono PCM with the iLBC encoder of libjitsi (Maven Central org.jitsi:libjitsi,
// Apache-2.0; its org.jitsi.impl.neomedia.codec.audio.ilbc.ilbc_encoder is a Java port of the
// RFC 3951 reference encoder) and writes FFmpeg's iLBC storage file: "#!iLBC20\n" or
// "#!iLBC30\n", then the frames (RFC 3951 §3: 38 octets per 20 ms, 50 per 30 ms).
//
//   java -cp libjitsi.jar IlbcEncode.java MODE IN.pcm OUT.lbc      (MODE: 20 or 30)
//
// The encoder class is package-private: it is reached by reflection (this file is a tool that
// makes test data, not part of qoe).
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

public class IlbcEncode {
    public static void main(String[] args) throws Exception {
        int mode = Integer.parseInt(args[0]);
        if (mode != 20 && mode != 30) {
            throw new IllegalArgumentException("MODE is 20 or 30");
        }
        byte[] pcm = Files.readAllBytes(Paths.get(args[1]));
        Class<?> cls = Class.forName("org.jitsi.impl.neomedia.codec.audio.ilbc.ilbc_encoder");
        Constructor<?> make = cls.getDeclaredConstructor(int.class);
        make.setAccessible(true);
        Object encoder = make.newInstance(mode);
        Method encode = cls.getDeclaredMethod("encode", byte[].class, int.class, byte[].class, int.class);
        encode.setAccessible(true);
        int inBytes = mode * 8 * 2;  // 8 samples a millisecond, 2 octets a sample
        int outBytes = mode == 20 ? 38 : 50;
        byte[] frame = new byte[outBytes];
        try (OutputStream out = new FileOutputStream(args[2])) {
            out.write(("#!iLBC" + mode + "\n").getBytes(StandardCharsets.US_ASCII));
            for (int i = 0; i + inBytes <= pcm.length; i += inBytes) {
                int n = (Integer) encode.invoke(encoder, frame, 0, pcm, i);
                if (n != outBytes) {
                    throw new IllegalStateException("the encoder wrote " + n + " octets, not " + outBytes);
                }
                out.write(frame, 0, n);
            }
        }
    }
}
